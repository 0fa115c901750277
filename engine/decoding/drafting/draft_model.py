"""The draft model's round: K autoregressive steps of a small model, each keeping the distribution it sampled from.

Rejection sampling needs q_i, the draft's warped distribution at every drafted position, not just the token;
greedy drafting needs only the tokens. Every drafted token is verified: the policy's K is the one cut. (An earlier
confidence cut dropped a low-confidence tail after the draft model had drafted it and the target had verified it,
so it only threw accepted tokens away: 1.62 instead of 2.47 tokens per round at K = 4. Stopping the draft model
itself early would need a host read per step.) What it shares with the other network drafters (timed rounds, the
lazy steps) is in `network_drafter.py`.

Under an output constraint (`constraint.py`) each step's distribution is masked by the grammar advanced over the
draft so far, which needs each token on the host before the next step: a constrained draft reads every token
(`constrained_steps`), and stops after a token that completes the grammar.

`make_drafter` is the kind's maker (`maker.py`): it drafts the next round during each verify with SSD (`ssd.py`)
when asked to, plainly otherwise.
"""
from __future__ import annotations

import mlx.core as mx

from ...arrays import int_item
from .. import clock
from ..cached_model import CachedModel
from ..constraint import Constraint, restrict
from ..policy.draft_length import DraftPolicy
from ..sampling import Warper
from .drafter import NO_DRAFT, Draft, Drafter
from .maker import MakerInputs
from .network_drafter import NetworkDrafter, draft_steps
from .ssd import SsdDrafter, SsdSwitch

# The most missing tokens a draft's first step takes in one pass before the rest is prefilled in chunks (after
# lookup drafted for a while, or a model with recurrent state returned to a checkpoint).
CATCH_UP_TAIL = 80


def make_drafter(given: MakerInputs) -> Drafter:
    """The draft model's drafter for an answer: drafting the next round during each verify with SSD (not under an
    output constraint, whose grammar is not advanced over outcomes yet to be verified, nor under Automatic, which
    asks its candidates for drafts each round), plainly otherwise."""
    pair, params = given.pair, given.params
    assert pair.draft_cache is not None  # asked for without a draft model: `generation._check_request` refused it
    plain = DraftModelDrafter(pair.draft_cache, given.warper, given.policy, given.constraint)
    if not params.ssd or given.constraint is not None or given.automatic:
        return plain
    switch = None if params.ssd_always else pair.policy(("ssd", *given.settings), SsdSwitch)
    return SsdDrafter(plain, params.fanout, switch)


class DraftModelDrafter(NetworkDrafter):
    """Proposes tokens with a draft model whose cache follows the context.

    Args:
        cached: the draft model and its cache.
        warper: the sampling warp shared with the target.
        policy: chooses how many tokens to draft.
        constraint: the grammar the output must follow (None: free text).
    """

    def __init__(self, cached: CachedModel, warper: Warper, policy: DraftPolicy, constraint: Constraint | None = None) -> None:
        super().__init__(warper, policy, "model")
        self.constraint = constraint
        self.cached = cached

    def propose(self, context: list[int], limit: int, split_pass: bool = False, keep_rows: bool = False) -> Draft:
        k = self._last_k = self.policy.choose(self.source, limit, split_pass)
        if not k:
            return NO_DRAFT
        return self.draft_chosen(context, k, keep_rows)

    def draft_chosen(self, context: list[int], k: int, keep_rows: bool = False) -> Draft:
        """Draft the `k` tokens the policy chose, timing the round when it is one of those timed."""
        self._last_k = k
        return self.draft(context, k, self._next_timed(), keep_rows)

    def draft(self, context: list[int], k: int, timed: bool = False, keep_rows: bool = False) -> Draft:
        """Draft `k` tokens after `context`, without waiting for the device (unless `timed`).

        Args:
            context: the tokens so far (prompt and output).
            k: how many tokens to draft.
            timed: wait for the draft to finish, so that its cost can be measured.
            keep_rows: also feed the last draft token and keep the draft's logits at every position, K + 1
                rows (SSD guesses the round's outcome from them).
        """
        start = clock.now()
        tail = self.cached.catch_up(context, max_tail=CATCH_UP_TAIL)
        catch_up_s = clock.now() - start
        history = mx.array(context, dtype=mx.uint32) if self.warper.adjusts_logits else None
        logits = self.cached.forward(mx.array(tail, dtype=mx.uint32), ids=tail)[-1:]
        self.cached.checkpoint_round()  # what follows may be rejected
        if self.constraint is not None:
            tokens, probs, ids = constrained_steps(self.cached, self.warper, history, logits, k, len(context), self.constraint)
            draft = Draft(tokens, len(ids), probs, self.source, catch_up_s=catch_up_s, timed=timed, fed=len(ids) - 1, ids=ids)
            draft.draft_s = clock.now() - start
            return draft
        tokens, probs, rows = draft_steps(self.cached, self.warper, history, logits, k, len(context), keep_rows)
        draft = Draft(tokens, k, probs, self.source, catch_up_s=catch_up_s, timed=timed,
                      fed=k if keep_rows else k - 1, rows=rows)
        if timed:
            mx.eval(draft.tokens)
        draft.draft_s = clock.now() - start
        return draft

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        """Record the ids of the draft tokens that were fed back into the draft model (all but the last, or all
        with `keep_rows`)."""
        if draft.source == self.source:
            fed = len(ids) - 1 if draft.fed is None else draft.fed
            self.cached.resolve(ids[: max(fed, 0)])


def constrained_steps(cached: CachedModel, warper: Warper, history: mx.array | None, logits: mx.array, k: int,
                      position: int, constraint: Constraint) -> tuple[mx.array, mx.array | None, list[int]]:
    """`draft_steps` under an output constraint: each step masked by the grammar advanced over the draft so far.

    Returns the tokens, their (masked, warped) distributions when sampling, and their ids as read; at most `k`,
    fewer when a token completes the grammar. The grammar is left in its committed state."""
    tokens: list[mx.array] = []
    probs: list[mx.array] = []
    ids: list[int] = []
    for i in range(k):
        row = restrict(warper.fit_width(logits), constraint.mask())
        if history is not None:
            row = warper.adjust_logits(row, mx.concatenate([history, *tokens]), None)
        token, logprobs = warper.choose(row, position + i)
        token_id = int_item(token)
        if not constraint.push(token_id):
            break
        ids.append(token_id)
        tokens.append(token)
        if logprobs is not None:
            probs.append(mx.exp(logprobs))
        if constraint.finished or i + 1 == k:
            break
        logits = cached.forward(token)
    constraint.rollback()
    if not ids:
        return mx.array([], dtype=mx.uint32), None, []
    return mx.concatenate(tokens), mx.concatenate(probs, axis=0) if probs else None, ids
