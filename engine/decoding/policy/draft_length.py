"""Choosing each round's draft length from what speculation costs and gains on this machine, for these models.

The cost model (docs/design.md): with per-token acceptance rate a, draft length K, draft cost c per token and verify
time t(K+1) for a target pass over K+1 tokens, a round yields E(K) = (1 - a^(K+1)) / (1 - a) tokens in
K*c + t(K+1) seconds. Standard decoding (K = 0) yields 1 token in t(1). The adaptive policy measures a, c
and t online and picks the K with the most tokens per second, K = 0 included, so speculation that loses
(a useless draft, a compute-bound backend) falls back to standard decoding by itself.

Estimates:
- acceptance per drafter source (`estimates.py`): a Beta(0.5, 1.5) posterior over "the next draft token is accepted" (a
  prior mean of 0.25: unproven drafts must earn their rounds), counting the accepted tokens and the one
  rejection of each round. It forgets at a known rate: counts decay by DECAY every round (so long after a
  drafter was given up the estimate widens again), and weigh at most EVIDENCE draft tokens (so a draft that
  turns bad after a long good stretch is given up within tens of rounds, not hundreds).
- verify time: per width, the median of the latest SAMPLES measurements (one slow round, a page fault or a
  busy core, must not make plain steps look expensive), made non-decreasing in the width, with a
  straight line t(L) = t1 + slope*(L - 1) across the widths seen (`estimates.verify_line`).
- draft cost per token and source: the median of its latest SAMPLES measurements, catch-up excluded.

Probing: a drafter the estimates have given up on is still tried now and then, because an answer can start
copying, or a draft model can start agreeing, long after the estimate went low. A probe drafts the K that an
acceptance drawn from the estimate's uncertainty would pick (Thompson sampling): a drafter that could not pay
even then is never probed, and the probe budget (what probes lose against plain steps, a share of the time the
tokens would have taken as plain steps) grows with the gain in sight. A drafter is not given up before its
first FIRST_EVIDENCE tokens were verified. Under Automatic a given-up drafter is probed while another pays too
(`probe`), against that drafter's predicted rate instead of plain steps': an answer can change within one kind of
prompt as well.

Switching from plain steps to drafting costs an extra pass once (the next plain pass was already queued);
a draft model, which always has a draft, spreads it over RUNWAY rounds (`_round_time`).

The estimates live as long as the pair (`ModelPair.policy`): later turns and later chats start from what
earlier ones measured instead of paying for learning again (Automatic's, later launches: `memory.py`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Protocol

from ...drafter_kinds import is_block, is_persistent
from ...events import PolicyBelief
from . import memory
from .estimates import DECAY, AcceptanceEstimate, PositionalAcceptance, RecentCost, RoundCosts, expected_tokens, verify_line

MARGIN = 1.05  # speculate only when it predicts at least 5% more tokens per second than a plain step
PROBE_SHARE = 0.01  # the most of the plain-step time that probes may lose when little gain is in sight
GAIN_SHARE = 0.1  # more of it per unit of relative gain a probe could find (0.4 more tokens/s: 4% more)
MAX_PROBE_SHARE = 0.06  # and never more than this
FIRST_EVIDENCE = 12  # draft tokens a drafter has verified before it can be given up on
RUNWAY = 8  # rounds a switch from plain steps to a draft model is expected to last (see `_round_time`)
PROBE_ALLOWANCE = 4  # target steps probes may lose before any budget is earned: a session learns early
PROBE_DRAFT, PROBE_MOST = 2, 4  # the fewest and the most tokens a probe drafts
PROBE_GAP = 8  # rounds at least between probes of one drafter


@dataclass(frozen=True)
class RoundShape:
    """What a round's time depends on besides K and the draft cost (`AdaptiveDraftLength._round_time`): whether the
    drafter drafts a block in one pass (`per_pass`: its cost is per pass), the rounds it can go on drafting, over
    which a switch from plain steps is spread (`runway`), and whether the target's next pass is already queued
    (`split_pass`: a draft then costs a verify pass of its own)."""

    per_pass: bool = False
    runway: int = 1
    split_pass: bool = False

    @classmethod
    def of(cls, source: str, split_pass: bool) -> RoundShape:
        """A round of `source`: a network always has a draft (RUNWAY rounds), lookup's match may end after one."""
        return cls(is_block(source), RUNWAY if is_persistent(source) else 1, split_pass)


class DraftPolicy(Protocol):
    """Chooses how many tokens each round drafts, and learns from what rounds cost.

    Attributes:
        max_draft: the most any round may draft.
        last_prediction: when `choose` last ran, its predicted tokens per second for the length it chose and for
            K = 0, or None (a fixed length predicts nothing).
    """

    @property
    def max_draft(self) -> int: ...  # read-only: a policy Automatic wraps (`automatic.Ballot`) passes it through

    @property
    def last_prediction(self) -> tuple[float, float] | None: ...

    def choose(self, source: str, available: int, split_pass: bool = False) -> int:
        """How many of `available` tokens a drafter (`source`) should draft now; 0 for a plain step. `split_pass`:
        the target's next pass is already queued (plain rounds pipeline it), so a draft now costs a verify pass of
        its own on top of it (the decoder knows, and says so each round)."""

    def observe(self, costs: RoundCosts) -> None:
        """Learn from one round."""

    def beliefs(self) -> list[PolicyBelief]:
        """What it believes of each drafter, for the stats panel and the server (empty for a fixed K)."""

    def gave_up_on(self, source: str) -> bool:
        """Whether its estimates choose K = 0 for a drafter now (it drafts only when probed)."""

    def least_survival(self) -> float:
        """The least chance of acceptance (its tokens before it accepted) at which a draft token the last `choose`
        allowed still pays for its place in the verify pass; 0: verify every one (a fixed K)."""


class FixedDraftLength:
    """Always draft K tokens (or what is available): mlx-lm's behaviour, and the benchmark's 'speculative'."""

    def __init__(self, k: int) -> None:
        self.max_draft = k
        self.last_prediction: tuple[float, float] | None = None  # a fixed length predicts nothing

    def choose(self, source: str, available: int, split_pass: bool = False) -> int:
        return min(self.max_draft, available)

    def observe(self, costs: RoundCosts) -> None:
        pass

    def beliefs(self) -> list[PolicyBelief]:
        return []

    def gave_up_on(self, source: str) -> bool:
        return False

    def least_survival(self) -> float:
        return 0.0


@dataclass
class AdaptiveDraftLength:
    """Picks K in 0..max_draft per round to maximise expected tokens per second.

    Attributes:
        max_draft: the largest K it may choose.
        first_draft: K for a drafter's first round, before anything is measured.
    """

    max_draft: int
    first_draft: int = 4
    _acceptance: dict[str, AcceptanceEstimate] = field(default_factory=dict)
    _draft_cost: dict[str, RecentCost] = field(default_factory=dict)
    _verify: dict[int, RecentCost] = field(default_factory=dict)
    _fitted: tuple[float, float] | None = None  # the verify-time line, refitted after each new measurement
    last_prediction: tuple[float, float] | None = None
    _refed: float = 0.0  # tokens a round's pass reads beyond its draft and next token (decaying mean)
    _plain_s: float = 0.0  # what the tokens so far would have cost as plain steps
    _probe_loss_s: float = 0.0  # what probes cost beyond that
    _since_draft: dict[str, int] = field(default_factory=dict)  # rounds since each drafter last drafted
    _probing: tuple[str, RoundShape, float] | None = None  # the drafter last granted a probe, its round, the rate it displaced
    _verified: dict[str, int] = field(default_factory=dict)  # draft tokens each drafter has had verified, ever
    _positions: dict[str, PositionalAcceptance] = field(default_factory=dict)  # block drafters' acceptance by position
    _rng: random.Random = field(default_factory=lambda: random.Random(0))  # plausible acceptances, for probes

    def acceptance(self, source: str) -> float:
        """The current estimate of the per-token acceptance rate of a drafter."""
        return self._acceptance.setdefault(source, AcceptanceEstimate()).mean

    def acceptance_along(self, source: str, positions: int) -> float | list[float]:
        """What `expected_tokens` takes for a drafter: its rate, or a block drafter's rate at each position."""
        if not is_block(source):
            return self.acceptance(source)
        return self._positions.setdefault(source, PositionalAcceptance()).rates(self.acceptance(source), positions)

    def draft_cost(self, source: str) -> float | None:
        """Seconds per drafted token of a drafter, per pass of a block drafter (None before a timed round measured it)."""
        recent = self._draft_cost.get(source)
        return recent.median if recent else None

    def verify_time(self, width: int) -> float | None:
        """Predicted seconds for a target pass over `width` tokens (None before any measurement).

        Always read off the fitted line, never a single width's measurements: a pass over more tokens cannot
        cost less, and comparing one noisy number with another would let noise decide (a draft that is never
        accepted would look worth drafting whenever a plain step happened to be measured slow).
        """
        if not self._verify:
            return None
        base, slope = self._line()
        return base + slope * (width - 1)

    def _line(self) -> tuple[float, float]:
        """(t1, slope) of the verify-time line through the measured widths."""
        if self._fitted is None:
            self._fitted = verify_line(self._verify)
        return self._fitted

    def choose(self, source: str, available: int, split_pass: bool = False, probe: bool = True) -> int:
        """The K (at most `available`) with the best predicted tokens per second (0: decode normally, or a probe if
        `probe`).

        The predicted rate rises with K and then falls, so the scan stops at the first K that does worse
        than the one before (this runs every round, and must stay small next to a forward pass).
        """
        self.last_prediction = None
        limit = min(self.max_draft, available)
        if limit <= 0:
            return 0
        cost = self.draft_cost(source)
        if not self._verify or cost is None:
            return min(limit, self.first_draft)  # nothing measured yet: draft once to learn a, c and t
        shape = RoundShape.of(source, split_pass)
        plain = 1.0 / self._line()[0]
        best_k, best_rate = self._best(self.acceptance_along(source, limit), limit, cost, shape)
        best_k = best_k if best_rate >= MARGIN * plain else 0
        self.last_prediction = (best_rate if best_k else plain, plain)
        return best_k or (self._probe(source, limit, cost, plain, shape) if probe else 0)

    def probe(self, source: str, available: int, split_pass: bool = False, rival: float = 0.0) -> int:
        """K for a probe of a drafter not chosen now, or 0, where another drafter is predicted to give `rival` tokens
        per second this round (Automatic: a probe must look able to beat it, and what it loses is counted against it;
        0: plain steps are the rival, as for a drafter alone)."""
        limit, cost = min(self.max_draft, available), self.draft_cost(source)
        if limit <= 0 or cost is None or not self._verify:
            return 0
        plain = 1.0 / self._line()[0]
        self.last_prediction = (plain, plain)  # as `choose` predicts for a probe
        return self._probe(source, limit, cost, max(plain, rival), RoundShape.of(source, split_pass))

    def _best(self, acceptance: float | list[float], limit: int, cost: float, shape: RoundShape) -> tuple[int, float]:
        """(K, predicted tokens per second) of the best K in 1..limit at `acceptance`, for rounds of `shape`."""
        best_k, best_rate, previous = 0, 0.0, 0.0
        for k in range(1, limit + 1):
            rate = expected_tokens(acceptance, k) / self._round_time(k, cost, shape)
            if rate > best_rate:
                best_k, best_rate = k, rate
            if rate < previous:
                break
            previous = rate
        return best_k, best_rate

    def _probe(self, source: str, limit: int, cost: float, bar: float, shape: RoundShape) -> int:
        """K for a probe of a drafter the estimate has given up on, or 0, where the round would otherwise run at `bar`
        tokens per second (a plain step's rate, or the drafter Automatic would choose).

        The probe asks the question the estimate cannot answer yet: an acceptance drawn from the estimate's own
        uncertainty (Thompson sampling) says what the drafter could plausibly be worth now. A drafter that would
        not beat `bar` even then is not probed at all; one that could is probed at the K that would, with a
        budget that grows with the gain in sight (PROBE_SHARE of the plain-step time, up to MAX_PROBE_SHARE, and
        PROBE_ALLOWANCE steps to start a session with). A drafter whose first FIRST_EVIDENCE tokens were unlucky is
        probed at once: early bad luck gave up on a draft that paid.
        """
        estimate = self._acceptance.setdefault(source, AcceptanceEstimate())
        learning = self._verified.get(source, 0) < FIRST_EVIDENCE
        if self._since_draft.get(source, 0) < PROBE_GAP and not learning:
            return 0
        plausible = estimate.sample(self._rng)
        k, rate = self._best(plausible, limit, cost, shape)
        k = min(max(k, PROBE_DRAFT), PROBE_MOST, limit)
        gain = rate / bar - 1.0
        if gain <= MARGIN - 1.0:
            return 0
        share = min(MAX_PROBE_SHARE, PROBE_SHARE + GAIN_SHARE * gain)
        allowance = PROBE_ALLOWANCE * self._line()[0]
        if not learning and self._probe_loss_s + self._round_loss(k, cost, 1, shape, bar) > share * self._plain_s + allowance:
            return 0
        self._probing = (source, shape, bar)
        return k

    def _round_time(self, k: int, cost: float, shape: RoundShape) -> float:
        """Predicted seconds of a round drafting K tokens, until the target's next pass is as far as a plain
        step would have brought it.

        Measured on SmolLM2 here: after a pipelined plain step, a draft's verify is a pass of its own and the
        round after it cannot be pipelined (124 ms against 62 ms plain), so drafting 1-2 tokens at 33%
        acceptance ran at 0.90x standard while the one-pass formula predicted a gain. That extra pass is paid
        once per switch from plain steps to drafting, so it is spread over the rounds the drafter can go on
        drafting (`shape.runway`): a draft model always has a draft, so charging its whole cost to one round kept
        a draft that paid 1.65x given up for good (issue 27); a short lookup match pays it alone.
        """
        base, slope = self._line()
        split = base / shape.runway if shape.split_pass else 0.0
        return (cost if shape.per_pass else k * cost) + base + slope * (k + self._refed) + split

    def _round_loss(self, k: int, cost: float, emitted: float, shape: RoundShape, bar: float) -> float:
        """Predicted seconds a round of K drafted tokens costs beyond the time `emitted` tokens take at `bar` tokens
        per second, a switch from plain steps paid whole (a rejected probe ends its run)."""
        return max(0.0, self._round_time(k, cost, replace(shape, runway=1)) - emitted / bar)

    def beliefs(self) -> list[PolicyBelief]:
        return [self.belief(source) for source in self._acceptance]

    def least_survival(self) -> float:
        """A token adds its chance of acceptance to a round's tokens and the verify line's slope to its time: it
        raises the predicted rate r of the K chosen when that chance is at least slope * r (0 while learning)."""
        if not self._verify or self.last_prediction is None:
            return 0.0
        return self._line()[1] * self.last_prediction[0]

    def gave_up_on(self, source: str) -> bool:
        if source not in self._acceptance or not self._verify or self.draft_cost(source) is None:
            return False
        return self.belief(source).chosen_k == 0

    def belief(self, source: str) -> PolicyBelief:
        """The estimates of one drafter, the steady-run prediction for every K, and the reason for its K."""
        cost = self.draft_cost(source)
        a = self.acceptance(source)
        verified = self._verified.get(source, 0)
        since = self._since_draft.get(source)
        if not self._verify or cost is None:
            return PolicyBelief(source, a, None, [], self.first_draft, "still measuring: nothing timed yet", since, verified)
        base = self._line()[0]
        steady = RoundShape(per_pass=is_block(source))  # a steady run: no switch from plain steps to pay
        rates = self.acceptance_along(source, self.max_draft)
        predicted = [1.0 / base] + [expected_tokens(rates, k) / self._round_time(k, cost, steady)
                                    for k in range(1, self.max_draft + 1)]
        best_possible = self._best(1.0, self.max_draft, cost, steady)[1]
        chosen = max(range(len(predicted)), key=predicted.__getitem__)
        chosen = chosen if predicted[chosen] >= MARGIN * predicted[0] else 0
        reason = _reason(a, predicted, chosen, verified, (cost / base, is_block(source)), best_possible)
        return PolicyBelief(source, a, cost / base, predicted, chosen, reason, since, verified)

    def measured(self) -> dict:
        """Its estimates as JSON data, for `memory.py` to keep across launches."""
        return memory.dump(self._acceptance, self._positions, self._draft_cost, self._verify, self._verified)

    def recall(self, measured: dict) -> None:
        """Start (a new policy) from estimates an earlier launch measured (`measured`'s data)."""
        memory.load(measured, self._acceptance, self._positions, self._draft_cost, self._verify, self._verified)

    def observe(self, costs: RoundCosts) -> None:
        for estimate in self._acceptance.values():
            estimate.decay()
        for positional in self._positions.values():
            positional.decay()
        self._account(costs)
        block = is_block(costs.source)
        if costs.drafted:
            estimate = self._acceptance.setdefault(costs.source, AcceptanceEstimate())
            estimate.add(costs.accepted, 1 if costs.accepted < costs.drafted else 0)
            if block:
                self._positions.setdefault(costs.source, PositionalAcceptance()).add(costs.accepted, costs.drafted)
        if costs.drafted and costs.draft_token_s is not None:
            self._draft_cost.setdefault(costs.source, RecentCost()).add(costs.draft_token_s * (costs.drafted if block else 1))
        if costs.verify_s is not None:
            self._verify.setdefault(costs.pass_width, RecentCost()).add(costs.verify_s)
            self._fitted = None
        if costs.drafted:
            self._refed = DECAY * self._refed + (1 - DECAY) * (costs.pass_width - costs.drafted - 1)

    def _account(self, costs: RoundCosts) -> None:
        """Charge a probe's loss to the probe budget, and earn budget from every token emitted."""
        self._since_draft = {source: rounds + 1 for source, rounds in self._since_draft.items()}
        if costs.drafted:
            self._since_draft[costs.source] = 0
            self._verified[costs.source] = self._verified.get(costs.source, 0) + costs.drafted
        if not self._verify:
            return
        emitted = costs.accepted + 1
        self._plain_s += emitted * self._line()[0]
        if self._probing is not None and costs.drafted and costs.source == self._probing[0]:
            cost = self.draft_cost(costs.source) or 0.0
            self._probe_loss_s += self._round_loss(costs.drafted, cost, emitted, *self._probing[1:])
        self._probing = None


def _reason(acceptance: float, predicted: list[float], chosen: int, verified: int, cost: tuple[float, bool],
            best_possible: float) -> str:
    """One sentence, in the app's words, on why the policy drafts K tokens, or none (`cost`: target steps per draft
    token, or per pass for a block drafter; `best_possible`: the best rate with every draft token accepted).

    A cost is said per draft token whatever the drafter, as the cost card says it: a block drafter's pass cost is
    spread over the tokens of the block it speaks of."""
    plain = predicted[0]
    if chosen:
        return (f"drafts {chosen} token{'s' * (chosen != 1)} a round: predicted {predicted[chosen] / plain:.2f}x as fast as without drafting, "
                f"at {acceptance:.0%} acceptance")
    steps, block = cost
    if best_possible < MARGIN * plain:
        per_token = steps / (len(predicted) - 1) if block else steps  # its best case: a whole block accepted
        return (f"drafts nothing: even with every draft accepted it would be at most {best_possible / plain:.2f}x as fast "
                f"as without drafting (a draft token costs {per_token:.2f} target steps), so it is not tried")
    if verified < FIRST_EVIDENCE:
        return (f"still measuring: {verified} of the first {FIRST_EVIDENCE} draft tokens checked; it drafts once "
                f"drafting looks likely to pay")
    best = max(range(1, len(predicted)), key=predicted.__getitem__)
    per_token = steps / best if block else steps
    return (f"drafts nothing: at best ({best} tokens a round) predicted {predicted[best] / plain:.2f}x as fast as without drafting, "
            f"at {acceptance:.0%} acceptance and {per_token:.2f} target steps a draft token; tried now and then")
