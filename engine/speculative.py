"""The speculative round (DESIGN.md): draft, verify in one target pass, accept by rejection sampling, rewind.

    1. a drafter proposes up to K tokens (a draft model with its q's, or prompt lookup with point masses);
    2. the target runs once over [last token, d_1..d_K] and gives p_1..p_{K+1};
    3. `acceptance` keeps a prefix of the draft and adds one correction or bonus token;
    4. the caches rewind on their own: each `CachedModel` knows the ids it holds, and the next round's
       context shares exactly the accepted prefix with them.

A round that drafts nothing is a plain target step, so the adaptive policy's K = 0 needs no other path.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import mlx.core as mx

from .acceptance import point_mass, verify_greedy, verify_sampled
from .adaptive import DraftPolicy, RoundCosts
from .cached_model import CachedModel
from .draft_model import NO_DRAFT, Draft, DraftModelDrafter
from .events import Origin
from .prompt_lookup import PromptLookupDrafter
from .sampling import Warper


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
            model drafts when lookup finds nothing.
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

    def start(self, context: list[int]) -> None:
        """Begin a generation after `context` (already prefilled into the target) by indexing it for lookup.

        The draft model catches up in its first draft, so a policy that never drafts never pays for it.
        """
        if self.lookup_drafter:
            self.lookup_drafter.start(context)

    def round(self, context: list[int], budget: int) -> Round:
        """One round after `context`, emitting at most `budget` tokens."""
        if self.lookup_drafter:
            self.lookup_drafter.observe(context)
        draft = self._propose(context, min(budget - 1, self.policy.max_draft))
        k = len(draft.tokens)

        start = time.perf_counter()
        tail = self.target.catch_up(context, step_size=self.prefill_step_size)
        ids = tail + draft.tokens
        logits = self.target.forward(mx.array(ids, dtype=mx.uint32), ids=ids)[-(k + 1) :]
        drafted = mx.array(draft.tokens, dtype=mx.uint32)
        if self.warper.uses_history:
            logits = self.warper.penalize(logits, mx.array(context, dtype=mx.uint32), drafted)
        if self.warper.greedy:
            n, next_token = verify_greedy(mx.argmax(logits, axis=-1).astype(mx.uint32), drafted)
        else:
            q = draft.probs if draft.probs is not None else point_mass(drafted, self.warper.vocab_size)
            n, next_token = verify_sampled(self.warper.logprobs(logits), q, drafted)
        accepted, next_id = mx.stack([n.astype(mx.uint32), next_token]).tolist()
        verify_s = time.perf_counter() - start

        draft_token_s = (draft.draft_s - draft.catch_up_s) / k if k else 0.0
        self.policy.observe(RoundCosts(draft.source, k, accepted, draft_token_s, verify_s))
        return Round(
            tokens=draft.tokens[:accepted] + [next_id],
            origins=round_origins(k, accepted),
            drafted=k,
            accepted=accepted,
            drafter=draft.source,
            draft_s=draft.draft_s,
            verify_s=verify_s,
        )

    def _propose(self, context: list[int], limit: int) -> Draft:
        """The round's draft: lookup if it finds a continuation worth drafting, else the draft model."""
        if limit <= 0:
            return NO_DRAFT
        if self.lookup_drafter:
            start = time.perf_counter()
            candidates = self.lookup_drafter.candidates(limit)
            k = self.policy.choose("lookup", len(candidates)) if candidates else 0
            if k:
                return Draft(candidates[:k], None, "lookup", draft_s=time.perf_counter() - start)
        if self.model_drafter:
            k = self.policy.choose("model", limit)
            if k:
                return self.model_drafter.draft(context, k, self.warper, self.policy.stop_threshold("model"))
        return NO_DRAFT
