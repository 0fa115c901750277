"""Standard decoding through the same interface as speculation: the toggle's baseline.

Like mlx-lm's `generate_step`, the next target pass is queued (on the lazy token) before the current token is
read back, so the device never waits for Python between tokens. It must be that lean: the benchmark holds it
to within a few percent of mlx-lm's own `stream_generate`.

Log-probabilities, when asked for, ride on the token's read (`logprobs.py`). Under an output constraint the next
step's mask depends on the current token, so each token is read before the next pass is queued.
"""

from __future__ import annotations

import mlx.core as mx

from . import clock
from . import logprobs as logprob_package
from .cached_model import CachedModel
from .constraint import Constraint, restrict
from .rounds import Round
from .sampling import Warper


class StandardDecoder:
    """One target pass per token, one pass always in flight.

    Args:
        target: the target model and its cache.
        warper: the sampling warp.
        logprobs: None, or how many alternatives to report with each token's log-probability.
        constraint: the grammar the output must follow (None: free text).
    """

    def __init__(self, target: CachedModel, warper: Warper, logprobs: int | None = None,
                 constraint: Constraint | None = None) -> None:
        self.target = target
        self.warper = warper
        self.logprobs = logprobs
        self.constraint = constraint
        self._queued: tuple[mx.array, mx.array] | None = None  # the next token, and what its round reads
        self._history: mx.array | None = None
        self._position = 0  # the context index of the token the next queued pass chooses

    def start(self, context: list[int]) -> None:
        """Begin a generation after `context` (already prefilled into the target) and queue its first token."""
        tail = self.target.catch_up(context)
        if self.warper.adjusts_logits:
            self._history = mx.array(context[: len(context) - len(tail)], dtype=mx.uint32)
        self._position = len(context)
        self._queued = self._step(mx.array(tail, dtype=mx.uint32), tail)

    def _step(self, inputs: mx.array, ids: list[int] | None) -> tuple[mx.array, mx.array]:
        """Queue a target pass on `inputs` and the choice of the token after them: (the token, what to read)."""
        raw = logits = self.target.forward(inputs, ids=ids)[-1:]
        if self.constraint is not None:
            logits = restrict(logits, self.constraint.mask())
        if self._history is not None:
            self._history = mx.concatenate([self._history, inputs])[-self.warper.history_size :]
            logits = self.warper.adjust_logits(logits, self._history, None)
        token, _ = self.warper.choose(logits, self._position)
        self._position += 1
        readable = logprob_package.with_token(raw, token, self.logprobs)
        mx.async_eval(readable)
        return token, readable

    def round(self, context: list[int], budget: int) -> Round:
        """Emit the queued token, queueing the next pass first unless this is the last token (or a constraint
        needs the token read first)."""
        start = clock.now()
        assert self._queued is not None, "start() first"
        current, readable = self._queued
        if self.constraint is None:
            self._queued = self._step(current, None) if budget > 1 else None
            token, logprobs = logprob_package.read_token(readable, self.logprobs)
        else:
            token, logprobs = logprob_package.read_token(readable, self.logprobs)
            self.constraint.advance([token])
            self._queued = self._step(current, None) if budget > 1 else None
        if self._queued is not None:
            self.target.resolve([token])
        return Round(
            tokens=[token],
            origins=["target"],
            drafted=0,
            accepted=0,
            drafter="none",
            draft_s=0.0,
            verify_s=clock.now() - start,
            logprobs=logprobs,
        )
