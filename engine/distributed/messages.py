"""The head's one message per target pass: what every rank must trim and feed, as one small int32 array.

The head decides everything (the draft, the verdict, the rewind); the other ranks only mirror its cache. Before
each target pass the head broadcasts (an all-sum to which the other ranks give zeros):

    [op, trim, position, count, kv_bits, tokens...]

- op: FORWARD, or STOP (the session ends; every rank leaves its loop);
- trim: positions to drop from the cache first: the previous round's rejected drafts (or a new turn's
  rewind to the common prefix; everything when the head started over);
- position: where the pass starts once trimmed (each rank checks its own cache agrees, so ranks never
  silently diverge);
- count: tokens fed: K + 1 in a verify pass, 1 in a plain step, a chunk of the prompt in a prefill;
- kv_bits: the head's key/value precision (0: full), so every stage quantizes alike.

Up to `INLINE` tokens travel in the message itself (every round: drafts are at most 64); a longer prefill
chunk follows in a second all-sum of exactly `count` ints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mlx.core as mx

from ..arrays import int_list
from .transport import Transport

FORWARD, STOP = 1, 2
HEADER = 5
INLINE = 72


@dataclass(frozen=True)
class Message:
    """One instruction from the head (see the module docstring)."""

    op: int
    trim: int = 0
    position: int = 0
    tokens: list[int] = field(default_factory=list)
    kv_bits: int = 0

    def header(self) -> list[int]:
        return [self.op, self.trim, self.position, len(self.tokens), self.kv_bits]


def encode(message: Message) -> mx.array:
    """The fixed-size array of the first all-sum (tokens beyond INLINE travel in a second one)."""
    inline = message.tokens[:INLINE] if len(message.tokens) <= INLINE else []
    values = message.header() + inline + [0] * (INLINE - len(inline))
    return mx.array(values, dtype=mx.int32)


def decode(values: list[int], rest: list[int] | None = None) -> Message:
    """The message from the first all-sum's values (and the second's, for a long chunk)."""
    op, trim, position, count, kv_bits = values[:HEADER]
    tokens = rest if rest is not None else values[HEADER : HEADER + count]
    return Message(op, trim, position, list(tokens), kv_bits)


def broadcast(transport: Transport, message: Message) -> None:
    """Send `message` from the head to every rank (one all-sum, two for a chunk longer than INLINE)."""
    transport.all_sum(encode(message), originates=True)
    if len(message.tokens) > INLINE:
        transport.all_sum(mx.array(message.tokens, dtype=mx.int32), originates=True)


def receive(transport: Transport) -> Message:
    """Wait for the head's next message (the other side of `broadcast`)."""
    values = int_list(transport.all_sum(mx.zeros((HEADER + INLINE,), dtype=mx.int32)))
    count = values[3]
    if count <= INLINE:
        return decode(values)
    rest = int_list(transport.all_sum(mx.zeros((count,), dtype=mx.int32)))
    return decode(values, rest)
