"""Automatic, the default drafter: every drafter the pair has is a candidate each round, and the one the adaptive
policy predicts fastest drafts (or none, for a plain target step).

"model+lookup" asks lookup first and the draft model after, and verifies the first draft offered. Automatic
generalises it. Each round it asks every candidate what it would draft, without drafting (lookup: the match it
found; a network drafter: up to the round's limit), ranks them by the tokens per second the pair's one adaptive
policy predicts for each (`AdaptiveDraftLength.choose` without its probes: from the acceptance and cost it measured of
each drafter on this machine, and the target's verify time), and asks them in that order; the first draft offered is verified.
A candidate not measured yet goes first, so that it drafts once and is measured. One not chosen (given up on, or
slower than the best) is probed now and then (`AdaptiveDraftLength.probe`, cheapest first: lookup, the built-in or
folder drafter, the draft model, `asking_order`), whether or not another pays: against the one that pays, a probe
must look able to beat it, and what it loses is counted against it. So a drafter left behind in one stretch of an
answer is found when it turns good later (the estimates of another kind of prompt are another policy's:
`generation._settings_key`). A round none drafts for is a plain step.

Which drafter proposes is all it changes: the verify pass and the acceptance rule are the same, so the output is
the target's (greedy: what standard decoding writes; seeded: the same draw, `sampling.py`).

Candidates: every drafter the registry says the pair has (`ModelPair.drafter_names`: lookup in the context and the
saved chats, the draft model, any kind registered since), with one drafter that reads the target's hidden states
(the pair's DFlash, DSpark or EAGLE-3 folder, or else the target's built-in MTP heads: a target pass has one
listener). The decoder makes each with its kind's maker. SSD is not used under Automatic: its drafts are made a
round ahead, not asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from ...drafter_kinds import drafter_label, kind, listens
from ...errors import UnsupportedModelError
from ...events import PolicyBelief
from ..policy import memory
from ..policy.draft_length import AdaptiveDraftLength, DraftPolicy
from ..policy.estimates import RoundCosts, expected_tokens
from .drafter import NO_DRAFT, Draft, Drafter

if TYPE_CHECKING:
    from ...params import GenerationParams
    from ..acceptance import Verdict
    from ..pair import ModelPair

AUTO = "auto"
_UNLOADABLE: WeakKeyDictionary[ModelPair, set[str]] = WeakKeyDictionary()  # heads a target declares that failed to load


def hidden_drafter(pair: ModelPair) -> str | None:
    """The candidate that reads the target's hidden states: the drafter folder loaded as the draft, else the target's
    built-in heads when it declares them and they load (a conversion that dropped them is no candidate)."""
    if pair.drafter_loaded is not None:
        return pair.drafter_loaded
    failed = _UNLOADABLE.setdefault(pair, set())
    for name in pair.drafter_names():
        if listens(name) and name not in failed:
            try:
                pair.drafter_state(name)
            except UnsupportedModelError:
                failed.add(name)
                continue
            return name
    return None


def asked_drafters(pair: ModelPair, params: GenerationParams) -> tuple[str, ...]:
    """The drafters an answer's rounds ask, in the order they are asked when none is predicted to pay: under
    Automatic every one the pair has, cheapest first (`asking_order`; a target pass has one listener, so one drafter
    that reads it), else the chosen one's parts (its row's drafting order)."""
    if params.drafter != AUTO:
        return kind(params.drafter).runs
    hidden = hidden_drafter(pair)
    found = [name for name in pair.drafter_names() if not listens(name) or name == hidden]
    return tuple(sorted(found, key=asking_order))


def asking_order(name: str) -> tuple[bool, bool]:
    """Where a candidate is asked among the others when none is predicted to pay: first a drafter that drafts only
    on a match (lookup: a miss costs nothing), then one reading the states the target already computed, then one
    running a network of its own (the draft model); the registry's order among equals."""
    row = kind(name)
    return row.persistent, not row.listens


def listening_drafter(pair: ModelPair, params: GenerationParams) -> str:
    """The drafter whose state hears the target's passes during an answer ("none" if no candidate reads them)."""
    return (hidden_drafter(pair) or "none") if params.drafter == AUTO else params.drafter


def pair_key(pair: ModelPair) -> str:
    """The pair's identity for the measurements kept across launches (`memory.py`)."""
    folders = [pair.target.path] + ([pair.draft.path] if pair.draft is not None else [])
    return memory.pair_identity(folders, pair.drafter_loaded)


def recalled(policy: AdaptiveDraftLength, pair: ModelPair, settings: tuple) -> AdaptiveDraftLength:
    """A new Automatic policy for the pair, started from what earlier launches measured with these settings."""
    return memory.recall(policy, pair_key(pair), settings)


def remember(policy: DraftPolicy, pair: ModelPair, settings: tuple) -> None:
    """Keep what an Automatic policy measured, for later launches (a fixed K measures nothing)."""
    if isinstance(policy, AdaptiveDraftLength):
        memory.remember(policy, pair_key(pair), settings)


class Ballot:
    """The pair's policy as Automatic and its candidates see it: while Automatic asks, a candidate's `choose` notes
    what it would draft and grants nothing; a candidate Automatic granted a probe drafts the probe's K (`granted`);
    otherwise every call is the policy's own."""

    def __init__(self, policy: DraftPolicy) -> None:
        self.policy = policy
        self.asking = False
        self.asked: tuple[str, int] | None = None
        self.granted: tuple[str, int] | None = None

    @property
    def max_draft(self) -> int:
        return self.policy.max_draft

    @property
    def last_prediction(self) -> tuple[float, float] | None:
        return self.policy.last_prediction

    def choose(self, source: str, available: int, split_pass: bool = False) -> int:
        if self.asking:
            self.asked = (source, available)
            return 0
        if self.granted is not None and self.granted[0] == source:
            k, self.granted = self.granted[1], None
            return min(k, available)
        return self.policy.choose(source, available, split_pass)

    def observe(self, costs: RoundCosts) -> None:
        self.policy.observe(costs)

    def beliefs(self) -> list[PolicyBelief]:
        """What the policy believes of each drafter, after which one Automatic would choose now and why."""
        beliefs = self.policy.beliefs()
        if not isinstance(self.policy, AdaptiveDraftLength):
            return beliefs
        return [automatic_belief(self.policy, beliefs), *beliefs]

    def gave_up_on(self, source: str) -> bool:
        return self.policy.gave_up_on(source)

    def least_survival(self) -> float:
        return self.policy.least_survival()


class AutomaticDrafter:
    """The candidates as one drafter: each round they are asked in the order of their predicted tokens per second.

    Args:
        candidates: the pair's drafters in their fixed order, each choosing through `ballot`.
        ballot: the policy they share.
    """

    def __init__(self, candidates: list[Drafter], ballot: Ballot) -> None:
        self.candidates = candidates
        self.ballot = ballot

    @property
    def idle(self) -> bool:
        return all(candidate.idle for candidate in self.candidates)

    def start(self, context: list[int]) -> None:
        for candidate in self.candidates:
            candidate.start(context)

    def propose(self, context: list[int], limit: int, split_pass: bool = False) -> Draft:
        """The draft of the first candidate, in `ranked` order, that offers one (NO_DRAFT: a plain step)."""
        for candidate in self.ranked(context, limit, split_pass):
            draft = candidate.propose(context, limit, split_pass)
            if draft.count:
                return draft
        return NO_DRAFT

    def ranked(self, context: list[int], limit: int, split_pass: bool = False) -> list[Drafter]:
        """The candidates that would draft this round, in the order they are asked: any not measured yet; else one
        granted a probe (`_probed`); then those predicted to pay, by their predicted tokens per second."""
        asks = self._asks(context, limit, split_pass)
        policy = self.ballot.policy
        self.ballot.granted = None
        if not isinstance(policy, AdaptiveDraftLength):
            return [candidate for candidate, _ in asks]
        unmeasured, paying = [], []
        for candidate, (source, available) in asks:
            k = policy.choose(source, available, split_pass, probe=False)  # the policy's own choice, its probes left out
            prediction = policy.last_prediction
            if prediction is None:
                unmeasured.append(candidate)
            elif k:
                paying.append((prediction[0], candidate))
        paying.sort(key=lambda bid: -bid[0])
        best = paying[0] if paying else (0.0, None)
        first = unmeasured or self._probed(policy, [ask for ask in asks if ask[0] is not best[1]], split_pass, best[0])
        return first + [candidate for _, candidate in paying]

    def _probed(self, policy: AdaptiveDraftLength, others: list[tuple[Drafter, tuple[str, int]]], split_pass: bool,
                rival: float) -> list[Drafter]:
        """The first of the candidates Automatic would not choose (`others`, in the fixed order) that the policy grants
        a probe against the chosen one's predicted tokens per second (`rival`; 0: none pays, plain steps are the
        rival), as a list of it; [] when none is granted."""
        for candidate, (source, available) in others:
            k = policy.probe(source, available, split_pass, rival)
            if k:
                self.ballot.granted = (source, k)
                return [candidate]
        return []

    def _asks(self, context: list[int], limit: int, split_pass: bool) -> list[tuple[Drafter, tuple[str, int]]]:
        """What each candidate would draft now, as (its policy name, tokens it has): asked, never drafted."""
        asks: list[tuple[Drafter, tuple[str, int]]] = []
        self.ballot.asking = True
        try:
            for candidate in self.candidates:
                self.ballot.asked = None
                candidate.propose(context, limit, split_pass)
                if self.ballot.asked is not None and self.ballot.asked[1] > 0:
                    asks.append((candidate, self.ballot.asked))
        finally:
            self.ballot.asking = False
        return asks

    def speculate(self, context: list[int], draft: Draft, verdict: Verdict) -> int:
        return sum(candidate.speculate(context, draft, verdict) for candidate in self.candidates)

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        for candidate in self.candidates:
            candidate.settle(draft, ids, accepted)


def automatic_belief(policy: AdaptiveDraftLength, beliefs: list[PolicyBelief]) -> PolicyBelief:
    """Which drafter Automatic would choose in a steady run now, and why, as the Policy row's first line."""
    measured = [b for b in beliefs if b.predicted_tps]
    paying = [b for b in measured if b.chosen_k]
    if not paying:
        verified = sum(b.verified_tokens for b in beliefs)
        best = max(measured, key=lambda b: max(b.predicted_tps[1:], default=0.0), default=None)
        why = "no drafter had a draft to offer" if best is None else "no drafter predicted faster" + _best_of(best)
        return PolicyBelief(AUTO, 0.0, None, [], 0, f"standard decoding ({why})", None, verified)
    chosen = max(paying, key=lambda b: b.predicted_tps[b.chosen_k])
    per_pass = expected_tokens(policy.acceptance_along(chosen.drafter, chosen.chosen_k), chosen.chosen_k)
    speedup = chosen.predicted_tps[chosen.chosen_k] / chosen.predicted_tps[0]
    # "predicted": beside the answer's measured tokens per pass, a bare figure read as a second measurement of it.
    reason = (f"{drafter_label(chosen.drafter)} (predicted {per_pass:.1f} tokens a pass drafting {chosen.chosen_k} a round, "
              f"{speedup:.2f}x as fast as without drafting)")
    return PolicyBelief(AUTO, chosen.acceptance, chosen.draft_cost_steps, chosen.predicted_tps, chosen.chosen_k, reason,
                        chosen.rounds_since_draft, chosen.verified_tokens)


def _best_of(belief: PolicyBelief) -> str:
    """'; the best, draft model, predicts 0.84x' for the drafter that came closest."""
    best = max(belief.predicted_tps[1:], default=0.0) / belief.predicted_tps[0]
    return f"; the closest, {drafter_label(belief.drafter)}, predicts {best:.2f}x"
