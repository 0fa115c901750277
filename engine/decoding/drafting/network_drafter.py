"""What drafters that run a network share (a draft model, an MTP or EAGLE-3 head, a DFlash block): the policy picks
K every round, some rounds are timed so that it learns the drafter's cost, and the token-by-token ones draw their K
tokens with `draft_steps` (the draft model, SSD's pre-drafts, the MTP and EAGLE-3 heads).

The policy needs a draft's cost apart from the verify's, so some rounds are timed (the first TIMED_FIRST, then one
in TIMED_EVERY): they wait for the draft before the verify pass is queued. Nothing else waits for the device: each
step is queued with `async_eval`, and the draft goes to the verify pass as lazy arrays, so the round's one host
read fetches the draft ids together with the verdict (as mlx-lm's loop does).
"""

from __future__ import annotations

from typing import Protocol

import mlx.core as mx

from ..policy.draft_length import DraftPolicy
from ..sampling import Warper
from .drafter import Draft

TIMED_FIRST, TIMED_EVERY = 3, 8


class NetworkDrafter:
    """What drafters that run a network (a draft model, an MTP head) share: the policy picks K every round, and
    some rounds are timed so that it learns the drafter's cost.

    Args:
        warper: the sampling warp shared with the target.
        policy: chooses how many tokens to draft.
        source: the policy's name for the drafter.
    """

    def __init__(self, warper: Warper, policy: DraftPolicy, source: str) -> None:
        self.source = source
        self.warper = warper
        self.policy = policy
        self._drafted_rounds = 0
        self._last_k = 0

    def start(self, context: list[int]) -> None:
        """A generation begins: its first rounds are timed again."""
        self._drafted_rounds = 0
        self._last_k = 0

    @property
    def idle(self) -> bool:
        """The policy gave it nothing to draft last time (one more observation rarely changes that)."""
        return self._last_k == 0

    def _next_timed(self) -> bool:
        """Whether the round about to be drafted is one of those timed (counting it)."""
        timed = self._drafted_rounds < TIMED_FIRST or self._drafted_rounds % TIMED_EVERY == 0
        self._drafted_rounds += 1
        return timed

    def speculate(self, context: list[int], draft: Draft, verdict: object) -> int:
        """Drafts nothing ahead (SSD does, in `ssd.py`)."""
        return 0


class Stepper(Protocol):
    """What `draft_steps` feeds each drafted token to: a draft model's `CachedModel`, or a head that chains on its own
    outputs (`mtp.py`); it returns the (1, V) logits of the next step."""

    def forward(self, token: mx.array, /) -> mx.array: ...


def draft_steps(cached: Stepper, warper: Warper, history: mx.array | None, logits: mx.array, k: int,
                position: int, keep_rows: bool = False) -> tuple[mx.array, mx.array | None, mx.array | None]:
    """Sample `k` tokens autoregressively from `logits` (the (1, V) row after the cached tokens), lazily.

    Returns the tokens (k,), their distributions (k, V) when sampling (None when greedy) and, with `keep_rows`,
    the draft's logits at all k + 1 positions (the last token fed too). `history`: the context for the
    penalties, which see the tokens drafted so far, as the target's verify does. `position`: the
    context index of the first drafted token (seeded drafts draw with each position's noise).
    """
    tokens: list[mx.array] = []
    probs: list[mx.array] = []
    rows: list[mx.array] = []
    for i in range(k):
        row = warper.fit_width(logits)
        rows.append(row)
        if history is not None:
            row = warper.adjust_logits(row, mx.concatenate([history, *tokens]), None)
        token, logprobs = warper.choose(row, position + i)
        tokens.append(token)
        if logprobs is not None:
            probs.append(mx.exp(logprobs))
        if i + 1 < k or keep_rows:
            logits = cached.forward(token)  # pending: its id is read with the round's verdict
        mx.async_eval(token)
    if keep_rows:
        rows.append(warper.fit_width(logits))
    return (mx.concatenate(tokens), mx.concatenate(probs, axis=0) if probs else None,
            mx.concatenate(rows, axis=0) if keep_rows else None)
