"""The speculative round (DESIGN.md): draft, verify in one target pass, accept by rejection sampling, rewind.

    1. a drafter proposes up to K tokens (a draft model with its q's, or prompt lookup with point masses);
    2. the target runs once over [last token, d_1..d_K] and gives p_1..p_{K+1};
    3. `acceptance` keeps a prefix of the draft and adds one correction or bonus token;
    4. the caches rewind on their own: each `CachedModel` knows the ids it holds, and the next round's
       context shares exactly the accepted prefix with them.

The round reads the device once: the draft stays lazy, the verify pass is built on it, and one read fetches
the draft ids with the verdict. The policy needs the draft's cost apart from the verify's, so some rounds
are timed (a drafter's first rounds, then one in TIMED_EVERY): they wait for the draft before verifying.

A round that drafts nothing is a plain target step. Plain rounds are pipelined like standard decoding: the
next target pass (the "head", p_1 of the next round) is queued before the current token is read, so an
adaptive policy that settles on K = 0 costs what standard decoding costs. If the next round drafts after
all, the queued head supplies its p_1 and the verify pass covers only the draft tokens.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import mlx.core as mx

from .acceptance import point_mass, verify_greedy, verify_sampled
from .policy import DraftPolicy, RoundCosts
from .cached_model import CachedModel
from .draft_model import NO_DRAFT, Draft, DraftModelDrafter, point_draft
from ..events import Origin
from .prompt_lookup import PromptLookupDrafter
from .sampling import Warper

# Prompt lookup's acceptance is bursty: once a copy is under way it tends to go on. The policy keeps a
# separate estimate for rounds that follow a fully accepted lookup round.
LOOKUP, LOOKUP_COPYING = "lookup", "lookup+copying"
TIMED_FIRST, TIMED_EVERY = 3, 8


@dataclass
class Round:
    """What one round emitted and what it cost."""

    tokens: list[int]
    origins: list[Origin]
    drafted: int
    accepted: int
    drafter: str
    draft_s: float
    verify_s: float


def round_origins(drafted: int, accepted: int) -> list[Origin]:
    """Origins of a round's tokens: the accepted drafts, then a correction, a bonus, or a plain target token."""
    last: Origin = "target" if drafted == 0 else ("bonus" if accepted == drafted else "corrected")
    return ["accepted"] * accepted + [last]


class SpeculativeDecoder:
    """Runs speculative rounds for one generation.

    Args:
        target: the target model and its cache.
        warper: the sampling warp, shared by draft and target.
        policy: chooses each round's draft length.
        model_drafter: drafts with a draft model (None: no draft model).
        lookup_drafter: drafts by prompt lookup (None: off). With both, lookup is tried first and the draft
            model drafts when lookup finds nothing worth drafting.
        prefill_step_size: prompt tokens per prefill pass.
    """

    def __init__(
        self,
        target: CachedModel,
        warper: Warper,
        policy: DraftPolicy,
        model_drafter: DraftModelDrafter | None = None,
        lookup_drafter: PromptLookupDrafter | None = None,
        prefill_step_size: int = 512,
    ) -> None:
        self.target = target
        self.warper = warper
        self.policy = policy
        self.model_drafter = model_drafter
        self.lookup_drafter = lookup_drafter
        self.prefill_step_size = prefill_step_size
        self._head: mx.array | None = None  # queued (1, V) logits for the next position
        self._copying = False
        self._drafted_rounds = 0
        self._model_k = 0  # what the policy chose for the draft model this round

    def start(self, context: list[int]) -> None:
        """Begin a generation after `context` (already prefilled into the target) by indexing it for lookup.

        The draft model was prefilled with the target, or catches up in its first draft.
        """
        self._head = None
        self._copying = False
        self._drafted_rounds = 0
        if self.lookup_drafter:
            self.lookup_drafter.start(context)

    def round(self, context: list[int], budget: int) -> Round:
        """One round after `context`, emitting at most `budget` tokens."""
        if self.lookup_drafter:
            self.lookup_drafter.observe(context)
        draft = self._propose(context, min(budget - 1, self.policy.max_draft))
        if draft.count:
            return self._speculate(context, draft)
        return self._plain(context, budget)

    def _propose(self, context: list[int], limit: int) -> Draft:
        """The round's draft: lookup if it finds a continuation worth drafting, else the draft model."""
        if limit <= 0:
            return NO_DRAFT
        if self.lookup_drafter:
            start = time.perf_counter()
            candidates = self.lookup_drafter.candidates(limit)
            source = LOOKUP_COPYING if self._copying else LOOKUP
            k = self.policy.choose(source, len(candidates)) if candidates else 0
            if k:
                return point_draft(candidates[:k], source, time.perf_counter() - start)
        if self.model_drafter:
            k = self.policy.choose("model", limit)
            self._model_k = k
            if k:
                timed = self._drafted_rounds < TIMED_FIRST or self._drafted_rounds % TIMED_EVERY == 0
                self._drafted_rounds += 1
                return self.model_drafter.draft(context, k, self.warper, self.policy.stop_threshold("model"), timed)
        return NO_DRAFT

    def _speculate(self, context: list[int], draft: Draft) -> Round:
        """Verify a draft in one target pass and keep what the acceptance rule accepts: one device read."""
        k = draft.count
        start = time.perf_counter()
        if self._head is not None:
            tail: list[int] = []
            rows = mx.concatenate([self._head, self.target.forward(draft.tokens)])
            self._head = None
            timed = False  # the head's pass was paid for by the previous round
        else:
            tail = self.target.catch_up(context, step_size=self.prefill_step_size)
            rows = self.target.forward(mx.concatenate([mx.array(tail, dtype=mx.uint32), draft.tokens]))[-(k + 1) :]
            timed = draft.timed
        if self.warper.uses_history:
            rows = self.warper.penalize(rows, mx.array(context, dtype=mx.uint32), draft.tokens)
        if self.warper.greedy:
            n, next_token = verify_greedy(mx.argmax(rows, axis=-1).astype(mx.uint32), draft.tokens, draft.keep)
        else:
            q = draft.probs if draft.probs is not None else point_mass(draft.tokens, self.warper.vocab_size)
            n, next_token = verify_sampled(self.warper.logprobs(rows), q, draft.tokens, draft.keep)
        keep = draft.keep if draft.keep is not None else mx.array(k)
        verdict = mx.stack([n.astype(mx.uint32), next_token.astype(mx.uint32), keep.astype(mx.uint32)])
        read = mx.concatenate([draft.tokens.astype(mx.uint32), verdict]).tolist()
        ids, (accepted, next_id, kept) = read[:k], read[k:]
        verify_s = time.perf_counter() - start
        self.target.resolve(tail + ids)
        if draft.source == "model":
            self.model_drafter.resolve(ids)

        self._copying = draft.source.startswith(LOOKUP) and accepted == kept
        draft_token_s = (draft.draft_s - draft.catch_up_s) / k if draft.timed else None
        self.policy.observe(RoundCosts(draft.source, kept, accepted, draft_token_s, verify_s if timed else None))
        return Round(
            tokens=ids[:accepted] + [next_id],
            origins=round_origins(kept, accepted),
            drafted=kept,
            accepted=accepted,
            drafter="lookup" if draft.source.startswith(LOOKUP) else draft.source,
            draft_s=draft.draft_s,
            verify_s=verify_s,
        )

    def _plain(self, context: list[int], budget: int) -> Round:
        """A target step with nothing drafted, the next step queued first when the next round looks plain too."""
        start = time.perf_counter()
        head = self._head
        if head is None:
            tail = self.target.catch_up(context, step_size=self.prefill_step_size)
            head = self.target.forward(mx.array(tail, dtype=mx.uint32), ids=tail)[-1:]
        self._head = None
        if self.warper.uses_history:
            head = self.warper.penalize(head, mx.array(context, dtype=mx.uint32), None)
        token, _ = self.warper.choose(head)
        if budget > 1 and self._next_round_looks_plain():
            self._head = self.target.forward(token)[-1:]
            mx.async_eval(self._head)
        token_id = int(token.item())
        if self._head is not None:
            self.target.resolve([token_id])
        self._copying = False
        verify_s = time.perf_counter() - start
        self.policy.observe(RoundCosts("none", 0, 0, 0.0, verify_s))
        return Round([token_id], ["target"], 0, 0, "none", 0.0, verify_s)

    def _next_round_looks_plain(self) -> bool:
        """Whether to queue the next target pass now: the draft model did not draft this round (one more
        observation rarely changes that), and lookup, which found nothing, is expected to find nothing."""
        return self.model_drafter is None or self._model_k == 0
