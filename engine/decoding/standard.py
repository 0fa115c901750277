"""Standard decoding through the same interface as speculation: the toggle's baseline.

Like mlx-lm's `generate_step`, the next target pass is queued (on the lazy token) before the current token is
read back, so the device never waits for Python between tokens. It must be that lean: the benchmark holds it
to within a few percent of mlx-lm's own `stream_generate`.
"""

from __future__ import annotations

import time

import mlx.core as mx

from .cached_model import CachedModel
from .sampling import Warper
from .rounds import Round


class StandardDecoder:
    """One target pass per token, one pass always in flight.

    Args:
        target: the target model and its cache.
        warper: the sampling warp.
    """

    def __init__(self, target: CachedModel, warper: Warper) -> None:
        self.target = target
        self.warper = warper
        self._queued: mx.array | None = None
        self._history: mx.array | None = None
        self._position = 0  # the context index of the token the next queued pass chooses

    def start(self, context: list[int]) -> None:
        """Begin a generation after `context` (already prefilled into the target) and queue its first token."""
        tail = self.target.catch_up(context)
        if self.warper.uses_history:
            self._history = mx.array(context[: len(context) - len(tail)], dtype=mx.uint32)
        self._position = len(context)
        self._queued = self._step(mx.array(tail, dtype=mx.uint32), tail)

    def _step(self, inputs: mx.array, ids: list[int] | None) -> mx.array:
        """Queue a target pass on `inputs` and the choice of the token after them."""
        logits = self.target.forward(inputs, ids=ids)[-1:]
        if self._history is not None:
            self._history = mx.concatenate([self._history, inputs])[-self.warper.history_size :]
            logits = self.warper.penalize(logits, self._history, None)
        token, _ = self.warper.choose(logits, self._position)
        self._position += 1
        mx.async_eval(token)
        return token

    def round(self, context: list[int], budget: int) -> Round:
        """Emit the queued token, queueing the next pass first unless this is the last token."""
        start = time.perf_counter()
        current = self._queued
        assert current is not None, "start() first"
        self._queued = self._step(current, None) if budget > 1 else None
        token = current.item()
        if self._queued is not None:
            self.target.resolve([token])
        return Round(
            tokens=[token],
            origins=["target"],
            drafted=0,
            accepted=0,
            drafter="none",
            draft_s=0.0,
            verify_s=time.perf_counter() - start,
        )
