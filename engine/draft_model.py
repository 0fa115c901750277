"""Drafting with a small model: K autoregressive steps, each keeping the distribution it sampled from.

Rejection sampling needs q_i, the draft's warped distribution at every drafted position, not just the token;
greedy drafting needs only the tokens. Each step is queued with `async_eval` so the device runs ahead of
Python. With a confidence threshold (adaptive mode) drafting stops early once the chance that every draft
token so far survives verification falls below what one more draft token costs (the first token is always
kept); the check reads step i's confidence while step i+1 is already queued, so it never stalls the device.
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
    """

    tokens: list[int]
    probs: mx.array | None
    source: str
    draft_s: float = 0.0
    catch_up_s: float = 0.0


NO_DRAFT = Draft(tokens=[], probs=None, source="none")


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
            stop_below: stop once the product of the draft's confidences falls below this (None: never).
        """
        start = time.perf_counter()
        tail = self.cached.catch_up(context, max_tail=CATCH_UP_TAIL, step_size=self.prefill_step_size)
        catch_up_s = time.perf_counter() - start
        history = mx.array(context, dtype=mx.uint32) if warper.uses_history else None

        logits = self.cached.forward(mx.array(tail, dtype=mx.uint32), ids=tail)[-1:]
        tokens: list[mx.array] = []
        probs: list[mx.array] = []
        fed: list[mx.array] = []
        survival = 1.0
        confidence = None
        for i in range(k):
            row = warper.penalize(warper.fit_width(logits), history, mx.concatenate(tokens) if tokens else None)
            token, logprobs = warper.choose(row)
            tokens.append(token)
            if logprobs is not None:
                probs.append(mx.exp(logprobs))
            if stop_below is not None:
                confidence = (mx.exp(logprobs) if logprobs is not None else mx.softmax(row, axis=-1)).max()
            if i + 1 < k:
                logits = self.cached.forward(token)
                fed.append(token)
            mx.async_eval(token, *(probs[-1:]), *([confidence] if confidence is not None else []))
            if confidence is not None:
                survival *= confidence.item()
                if survival < stop_below and len(tokens) > 1:
                    tokens.pop()
                    if probs:
                        probs.pop()
                    break
        ids = mx.concatenate(fed + tokens).tolist() if fed or tokens else []
        self.cached.resolve(ids[: len(fed)])
        drafted = ids[len(fed) :]
        return Draft(
            tokens=drafted,
            probs=mx.concatenate(probs, axis=0) if probs and drafted else None,
            source=self.source,
            draft_s=time.perf_counter() - start,
            catch_up_s=catch_up_s,
        )
