"""Drafting with a small model: K autoregressive steps, each keeping the distribution it sampled from.

Rejection sampling needs q_i, the draft's warped distribution at every drafted position, not just the token;
greedy drafting needs only the tokens. Nothing here waits for the device: each step is queued with
`async_eval`, and the draft goes to the verify pass as lazy arrays, so the round's one host read fetches
the draft ids together with the verdict (as mlx-lm's loop does). In adaptive mode the draft also computes,
on the device, how many leading tokens to verify: while the product of its confidences (its top
probabilities), its estimate that every token so far survives, stays above what one more verify slot costs.
The tail after that is verified as if never drafted. (Stopping the draft model itself early would need a
host read per step; the policy's K bounds the steps spent on a dropped tail.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import mlx.core as mx

from .cached_model import CachedModel
from .sampling import Warper

# The most missing tokens a draft's first step takes in one pass before the rest is prefilled in chunks.
CATCH_UP_TAIL = 8


@dataclass
class Draft:
    """A proposal for one round.

    Attributes:
        tokens: (K,) the proposed ids, lazy for a draft model.
        count: K, known on the host.
        probs: (K, V) the distributions the tokens were sampled from; None for greedy drafts and for
            point-mass proposals (prompt lookup).
        keep: (lazy) how many leading tokens to verify; None for all of them.
        source: "model", "lookup", "lookup+copying" or "none".
        draft_s: host seconds spent proposing (device time too when `timed`).
        catch_up_s: seconds of that spent prefilling context the draft model had missed.
        timed: whether the host waited for the draft, so that draft_s is its cost.
    """

    tokens: mx.array
    count: int
    probs: mx.array | None
    source: str
    keep: mx.array | None = None
    draft_s: float = 0.0
    catch_up_s: float = 0.0
    timed: bool = False


NO_DRAFT = Draft(tokens=mx.array([], dtype=mx.uint32), count=0, probs=None, source="none")


def point_draft(ids: list[int], source: str, draft_s: float) -> Draft:
    """A draft proposed on the host without distributions (prompt lookup)."""
    return Draft(mx.array(ids, dtype=mx.uint32), len(ids), None, source, draft_s=draft_s, timed=True)


def surviving_prefix(confidences: mx.array, stop_below: float) -> mx.array:
    """(lazy) How many leading draft tokens to verify: while the product of their confidences stays at or
    above `stop_below`; the first token always."""
    survives = (mx.cumprod(confidences) >= stop_below).astype(mx.int32)
    return mx.maximum(mx.cumprod(survives).sum(), 1)


class DraftModelDrafter:
    """Proposes tokens with a draft model whose cache follows the context.

    Args:
        cached: the draft model and its cache.
        prefill_step_size: chunk size when the draft must catch up on a long stretch of context.
    """

    source = "model"

    def __init__(self, cached: CachedModel, prefill_step_size: int = 512) -> None:
        self.cached = cached
        self.prefill_step_size = prefill_step_size

    def draft(
        self,
        context: list[int],
        k: int,
        warper: Warper,
        stop_below: float | None = None,
        timed: bool = False,
    ) -> Draft:
        """Draft `k` tokens after `context`, without waiting for the device (unless `timed`).

        Args:
            context: the tokens so far (prompt and output).
            k: how many tokens to draft.
            warper: the sampling warp shared with the target.
            stop_below: verify only the leading tokens whose confidence product stays at or above this
                (None: all of them).
            timed: wait for the draft to finish, so that its cost can be measured.
        """
        start = time.perf_counter()
        tail = self.cached.catch_up(context, max_tail=CATCH_UP_TAIL, step_size=self.prefill_step_size)
        catch_up_s = time.perf_counter() - start
        history = mx.array(context, dtype=mx.uint32) if warper.uses_history else None

        logits = self.cached.forward(mx.array(tail, dtype=mx.uint32), ids=tail)[-1:]
        tokens: list[mx.array] = []
        probs: list[mx.array] = []
        confidences: list[mx.array] = []
        for i in range(k):
            row = warper.fit_width(logits)
            if history is not None:
                row = warper.penalize(row, history, mx.concatenate(tokens) if tokens else None)
            token, logprobs = warper.choose(row)
            tokens.append(token)
            if logprobs is not None:
                probs.append(mx.exp(logprobs))
            if stop_below is not None:
                confidences.append((probs[-1] if logprobs is not None else mx.softmax(row, axis=-1)).max())
            if i + 1 < k:
                logits = self.cached.forward(token)  # pending: its id is read with the round's verdict
            mx.async_eval(token)
        draft = Draft(
            tokens=mx.concatenate(tokens),
            count=k,
            probs=mx.concatenate(probs, axis=0) if probs else None,
            source=self.source,
            keep=surviving_prefix(mx.stack(confidences), stop_below) if confidences else None,
            catch_up_s=catch_up_s,
            timed=timed,
        )
        if timed:
            mx.eval(draft.tokens, *([draft.keep] if draft.keep is not None else []))
        draft.draft_s = time.perf_counter() - start
        return draft

    def resolve(self, ids: list[int]) -> None:
        """Record the ids of the draft tokens fed back into the draft model (all but the last)."""
        self.cached.resolve(ids[: max(len(ids) - 1, 0)])
