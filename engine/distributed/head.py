"""The head's view of the pipelined target: a model that tells every rank what to trim and feed before each pass.

`CachedModel` (engine/decoding/cached_model.py) calls its model with token ids and its cache, rewinds that cache
after rejected drafts and new turns, and knows nothing else; the speculative round above it is unchanged. This
proxy stands in for the model: before each pass it reads the ids (drafts are lazy; the other ranks need them on
the host), compares where the cache now starts with where the last pass left it (the difference is what was
trimmed since, on a rejection or a rewind), broadcasts that in one message (`messages.py`), then runs the
head's own stage. Every other attribute is the model's.
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import QuantizedKVCache

from ..arrays import int_list
from ..errors import DistributedError
from .messages import FORWARD, STOP, Message, broadcast
from .transport import Transport


class PipelineHead:
    """The target's last stage on the head, driving the other stages.

    Args:
        model: the head's model, cut to its stage (`pipeline.cut`).
        transport: the head's end of the ring.

    Attributes:
        passes: target passes run (each one message).
    """

    def __init__(self, model: nn.Module, transport: Transport) -> None:
        self.model = model
        self.transport = transport
        self.passes = 0
        self._end = 0  # positions the other ranks' caches hold after the last pass
        self._closed = False

    def __call__(self, inputs: mx.array, cache: list[Any] | None = None, **kwargs: Any) -> mx.array:
        if cache is None:
            raise DistributedError("A pipelined target runs with its cache only (an internal error: please report it).")
        position = int(cache[0].offset)
        trim = self._end - position
        if trim < 0:
            raise DistributedError(
                f"The head's cache holds {position} positions but the other Macs only {self._end}: the ranks "
                "diverged (an internal error: please report it). Start again."
            )
        tokens = int_list(inputs)
        broadcast(self.transport, Message(FORWARD, trim, position, tokens, _kv_bits(cache)))
        self._end = position + len(tokens)
        self.passes += 1
        return self.model(inputs, cache=cache, **kwargs)

    def network_seconds(self) -> float:
        """The head's seconds in collectives so far (its messages, the hops, waiting on the other Macs): each round's
        share of it is the network's share of that round (`RoundEvent.network_s`)."""
        return self.transport.seconds

    def close(self) -> None:
        """End the session: every rank leaves its loop (sent once, and not over a ring that failed)."""
        if not self._closed and not self.transport.broken:
            self._closed = True
            broadcast(self.transport, Message(STOP))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def _kv_bits(cache: list[Any]) -> int:
    """The precision the head's cache stores keys and values in (0: full)."""
    first = cache[0]
    return int(first.bits) if isinstance(first, QuantizedKVCache) else 0
