"""Drafting with a small model: K autoregressive steps, each keeping the distribution it sampled from.

Rejection sampling needs q_i, the draft's warped distribution at every drafted position, not just the token;
greedy drafting needs only the tokens. Nothing here waits for the device: each step is queued with
`async_eval`, and the draft goes to the verify pass as lazy arrays, so the round's one host read fetches
the draft ids together with the verdict (as mlx-lm's loop does). Every drafted token is verified: the policy's
K is the one cut. (An earlier confidence cut dropped a low-confidence tail after the draft model had drafted
it and the target had verified it, so it only threw accepted tokens away: 1.62 instead of 2.47 tokens per
round at K = 4. Stopping the draft model itself early would need a host read per step.)

The policy needs the draft's cost apart from the verify's, so some rounds are timed (the first TIMED_FIRST,
then one in TIMED_EVERY): they wait for the draft before the verify pass is queued.
"""

from __future__ import annotations

import time

import mlx.core as mx

from .cached_model import CachedModel
from .draft import NO_DRAFT, Draft
from .policy import DraftPolicy
from .sampling import Warper

# The most missing tokens a draft's first step takes in one pass before the rest is prefilled in chunks (after
# lookup drafted for a while, or a model with recurrent state returned to a checkpoint).
CATCH_UP_TAIL = 80
TIMED_FIRST, TIMED_EVERY = 3, 8


class DraftModelDrafter:
    """Proposes tokens with a draft model whose cache follows the context.

    Args:
        cached: the draft model and its cache.
        warper: the sampling warp shared with the target.
        policy: chooses how many tokens to draft.
    """

    source = "model"

    def __init__(self, cached: CachedModel, warper: Warper, policy: DraftPolicy) -> None:
        self.cached = cached
        self.warper = warper
        self.policy = policy
        self._drafted_rounds = 0
        self._last_k = 0

    def start(self, context: list[int]) -> None:
        """The draft model was prefilled with the target, or catches up in its first draft."""
        self._drafted_rounds = 0
        self._last_k = 0

    @property
    def idle(self) -> bool:
        """The policy gave it nothing to draft last time (one more observation rarely changes that)."""
        return self._last_k == 0

    def propose(self, context: list[int], limit: int) -> Draft:
        k = self._last_k = self.policy.choose(self.source, limit)
        if not k:
            return NO_DRAFT
        timed = self._drafted_rounds < TIMED_FIRST or self._drafted_rounds % TIMED_EVERY == 0
        self._drafted_rounds += 1
        return self.draft(context, k, timed)

    def draft(self, context: list[int], k: int, timed: bool = False) -> Draft:
        """Draft `k` tokens after `context`, without waiting for the device (unless `timed`).

        Args:
            context: the tokens so far (prompt and output).
            k: how many tokens to draft.
            timed: wait for the draft to finish, so that its cost can be measured.
        """
        start = time.perf_counter()
        tail = self.cached.catch_up(context, max_tail=CATCH_UP_TAIL)
        catch_up_s = time.perf_counter() - start
        warper = self.warper
        history = mx.array(context, dtype=mx.uint32) if warper.uses_history else None

        logits = self.cached.forward(mx.array(tail, dtype=mx.uint32), ids=tail)[-1:]
        self.cached.checkpoint_round()  # what follows may be rejected
        tokens: list[mx.array] = []
        probs: list[mx.array] = []
        for i in range(k):
            row = warper.fit_width(logits)
            if history is not None:  # the penalty sees the tokens drafted so far, as the target's verify does
                row = warper.penalize(row, mx.concatenate([history, *tokens]), None)
            token, logprobs = warper.choose(row)
            tokens.append(token)
            if logprobs is not None:
                probs.append(mx.exp(logprobs))
            if i + 1 < k:
                logits = self.cached.forward(token)  # pending: its id is read with the round's verdict
            mx.async_eval(token)
        draft = Draft(
            tokens=mx.concatenate(tokens),
            count=k,
            probs=mx.concatenate(probs, axis=0) if probs else None,
            source=self.source,
            catch_up_s=catch_up_s,
            timed=timed,
        )
        if timed:
            mx.eval(draft.tokens)
        draft.draft_s = time.perf_counter() - start
        return draft

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        """Record the ids of the draft tokens that were fed back into the draft model (all but the last)."""
        if draft.source == self.source:
            self.cached.resolve(ids[: max(len(ids) - 1, 0)])
