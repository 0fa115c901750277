"""Drafting with a small model: K autoregressive steps, each keeping the distribution it sampled from.

Rejection sampling needs q_i, the draft's warped distribution at every drafted position, not just the token;
greedy drafting needs only the tokens. Each step is queued with `async_eval` so the device runs ahead of
Python, and the host reads nothing until the draft is complete: one read fetches the ids and, in adaptive
mode, the draft's confidence at each step (its top probability). The low-confidence tail is then dropped
before verification: tokens after the point where the chance that every draft token so far survives falls
below what one more verify slot costs (the first token is always kept). Stopping the draft model itself
early would need a host read per step, which is what this loop avoids; the policy's K bounds the waste.
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
        tokens: the proposed ids (possibly none).
        probs: (len(tokens), V) the distributions they were sampled from; None for greedy drafts and for
            point-mass proposals (prompt lookup).
        source: "model", "lookup" or "none".
        draft_s: seconds spent proposing, catch-up included.
        catch_up_s: seconds of that spent prefilling context the draft model had missed.
        steps: draft-model steps run (more than len(tokens) when a low-confidence tail was dropped).
    """

    tokens: list[int]
    probs: mx.array | None
    source: str
    draft_s: float = 0.0
    catch_up_s: float = 0.0
    steps: int = 0


NO_DRAFT = Draft(tokens=[], probs=None, source="none")


def surviving_prefix(confidences: list[float], stop_below: float | None) -> int:
    """How many leading draft tokens to verify: while the product of their confidences (the draft's estimate
    that all of them survive verification) stays at or above `stop_below`; the first token always."""
    if stop_below is None:
        return len(confidences)
    survival = 1.0
    for index, confidence in enumerate(confidences):
        survival *= confidence
        if survival < stop_below and index > 0:
            return index
    return len(confidences)


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
    ) -> Draft:
        """Draft up to `k` tokens after `context`.

        Args:
            context: the tokens so far (prompt and output).
            k: the most tokens to draft.
            warper: the sampling warp shared with the target.
            stop_below: verify only the leading tokens whose confidence product stays at or above this (None:
                all of them).
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
            row = warper.penalize(warper.fit_width(logits), history, mx.concatenate(tokens) if tokens else None)
            token, logprobs = warper.choose(row)
            tokens.append(token)
            if logprobs is not None:
                probs.append(mx.exp(logprobs))
            if stop_below is not None:
                confidences.append((probs[-1] if logprobs is not None else mx.softmax(row, axis=-1)).max())
            if i + 1 < k:
                logits = self.cached.forward(token)
            mx.async_eval(token)
        # The one host read drafting needs: the ids, and with them the confidences.
        ids_array = mx.concatenate(tokens)
        confidence_array = mx.stack(confidences) if confidences else None
        mx.eval(ids_array, *([confidence_array] if confidence_array is not None else []))
        ids = ids_array.tolist()
        self.cached.resolve(ids[: k - 1])
        keep = k if confidence_array is None else surviving_prefix(confidence_array.tolist(), stop_below)
        drafted = ids[:keep]
        return Draft(
            tokens=drafted,
            probs=mx.concatenate(probs[:keep], axis=0) if probs else None,
            source=self.source,
            draft_s=time.perf_counter() - start,
            catch_up_s=catch_up_s,
            steps=k,
        )
