"""The loop of every rank but the head: mirror the head's cache, one message and one pass at a time.

A worker decides nothing. It waits for the head's message (`messages.py`), trims its cache by the count the head
trimmed, checks that it now starts where the head's does, and runs its stage on the tokens: the first stage
embeds them, the others receive the activations before their first layer; each sends its output on after its
last layer (`pipeline.py`). It leaves the loop on the head's STOP.
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import mlx.nn as nn

from ..decoding import caches
from ..errors import DistributedError
from .messages import STOP, Message, receive
from .transport import Transport


class StageCache:
    """A worker's cache, kept equal to the head's in length and precision."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.kv_bits = 0
        self.layers: list[Any] = caches.make_cache(model)

    @property
    def offset(self) -> int:
        return int(self.layers[0].offset)

    def follow(self, message: Message) -> None:
        """Trim as the head did and check that both caches now start at the same position."""
        if message.kv_bits != self.kv_bits:
            self.kv_bits = message.kv_bits
            self.layers = caches.make_cache(self.model, message.kv_bits or None)
        elif message.trim:
            for layer in self.layers:
                layer.trim(message.trim)
        if self.offset != message.position:
            raise DistributedError(
                f"This Mac's cache holds {self.offset} positions where the head's holds {message.position}: the "
                "ranks diverged (an internal error: please report it). Start again."
            )

    def run(self, tokens: list[int]) -> None:
        """Run this stage on `tokens` (its sends happen inside) and keep the caches evaluated."""
        self.model(mx.array(tokens, dtype=mx.uint32)[None], cache=self.layers)
        mx.eval([layer.state for layer in self.layers])


def serve(model: nn.Module, transport: Transport) -> int:
    """Follow the head until it says STOP; returns the passes run."""
    cache = StageCache(model)
    passes = 0
    while True:
        message = receive(transport)
        if message.op == STOP:
            return passes
        cache.follow(message)
        cache.run(message.tokens)
        passes += 1
