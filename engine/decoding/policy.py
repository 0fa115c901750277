"""Choosing each round's draft length from what speculation costs and gains on this machine, for these models.

DESIGN.md's cost model: with per-token acceptance rate a, draft length K, draft cost c per token and verify
time t(K+1) for a target pass over K+1 tokens, a round yields E(K) = (1 - a^(K+1)) / (1 - a) tokens in
K*c + t(K+1) seconds. Standard decoding (K = 0) yields 1 token in t(1). The adaptive policy measures a, c
and t online and picks the K with the most tokens per second, K = 0 included, so speculation that loses
(a useless draft, a compute-bound backend) falls back to standard decoding by itself.

Estimates:
- acceptance per drafter source: a Beta(0.5, 1.5) posterior over "the next draft token is accepted" (a
  prior mean of 0.25: unproven drafts must earn their rounds), counting the accepted tokens and the one
  rejection of each round; counts decay every round, so that long after a drafter was given up the
  estimate widens again and a cheap enough drafter gets probed anew.
- verify time: per width, the median of the latest SAMPLES measurements (one slow round, a page fault or a
  busy core, must not make plain steps look expensive), made non-decreasing in the width, with a
  straight-line fit t(L) = t1 + slope*(L - 1) across the widths seen (before two widths are seen, a prior
  slope of PRIOR_SLOPE * t1 per extra token).
- draft cost per token and source: the median of its latest SAMPLES measurements, catch-up excluded.

Probing: a drafter the estimates have given up on is still tried now and then (K = PROBE_DRAFT), because an
answer can start copying, or a draft model can start agreeing, long after the estimate went low. Probes are
paid from a budget: their predicted loss against plain steps stays under PROBE_SHARE of the time the answer
tokens would have taken with plain steps, so probing costs at most about that share of the speed.

The estimates live as long as the pair (`ModelPair.policy`): later turns and later chats start from what
earlier ones measured instead of paying for learning again.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

PRIOR_SLOPE = 0.2  # extra verify cost per draft token, relative to one target step, before any measurement
PRIOR_ACCEPTED, PRIOR_REJECTED = 0.5, 1.5
DECAY = 0.99  # per round, on the acceptance counts
MARGIN = 1.05  # speculate only when it predicts at least 5% more tokens per second than a plain step
SAMPLES = 9  # measurements kept per cost, of which the median is used
PROBE_SHARE = 0.01  # the most of the plain-step time that probes may lose
PROBE_DRAFT = 2  # tokens a probe drafts
PROBE_GAP = 16  # rounds at least between probes of one drafter


def expected_tokens(acceptance: float, k: int) -> float:
    """E(K): tokens a round emits on average, the correction/bonus token included."""
    if acceptance >= 1.0:
        return float(k + 1)
    return (1.0 - acceptance ** (k + 1)) / (1.0 - acceptance)


class _Recent:
    """The latest SAMPLES measurements of one cost; its estimate is their median."""

    def __init__(self) -> None:
        self.samples: deque[float] = deque(maxlen=SAMPLES)

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


@dataclass
class _Acceptance:
    accepted: float = 0.0
    rejected: float = 0.0

    @property
    def mean(self) -> float:
        return (PRIOR_ACCEPTED + self.accepted) / (PRIOR_ACCEPTED + PRIOR_REJECTED + self.accepted + self.rejected)

    def decay(self) -> None:
        self.accepted *= DECAY
        self.rejected *= DECAY


@dataclass
class RoundCosts:
    """What one round measured, for the policy to learn from.

    Attributes:
        source: the drafter ("model", "lookup", "lookup+copying") or "none".
        drafted, accepted: draft tokens proposed and kept.
        draft_token_s: drafting time per drafted token, catch-up excluded (None when the round did not wait
            for the draft, so its cost is not known apart from the verify's).
        verify_s: wall time of the target pass (None when part of it was queued by the previous round, or
            the draft's device time is in it).
        width: tokens the target pass read (None: drafted + 1). More when a model with recurrent state
            returned to a checkpoint and fed the accepted tokens again.
    """

    source: str
    drafted: int
    accepted: int
    draft_token_s: float | None
    verify_s: float | None
    width: int | None = None

    @property
    def pass_width(self) -> int:
        return self.width if self.width is not None else self.drafted + 1


class DraftPolicy(Protocol):
    """Chooses how many tokens each round drafts, and learns from what rounds cost.

    Attributes:
        max_draft: the most any round may draft.
        last_prediction: when `choose` last ran, its predicted tokens per second for the length it chose and for
            K = 0, or None (a fixed length predicts nothing).
        split_pass: set by the decoder before each round: the target's next pass is already queued (plain
            rounds pipeline it), so a draft now costs a verify pass of its own on top of it.
    """

    max_draft: int
    last_prediction: tuple[float, float] | None
    split_pass: bool

    def choose(self, source: str, available: int) -> int:
        """How many of `available` tokens a drafter (`source`) should draft now; 0 for a plain step."""

    def observe(self, costs: RoundCosts) -> None:
        """Learn from one round."""


class FixedDraftLength:
    """Always draft K tokens (or what is available): mlx-lm's behaviour, and the benchmark's 'speculative'."""

    def __init__(self, k: int) -> None:
        self.max_draft = k
        self.last_prediction = None
        self.split_pass = False

    def choose(self, source: str, available: int) -> int:
        return min(self.max_draft, available)

    def observe(self, costs: RoundCosts) -> None:
        pass


@dataclass
class AdaptiveDraftLength:
    """Picks K in 0..max_draft per round to maximise expected tokens per second.

    Attributes:
        max_draft: the largest K it may choose.
        first_draft: K for a drafter's first round, before anything is measured.
    """

    max_draft: int
    first_draft: int = 4
    _acceptance: dict[str, _Acceptance] = field(default_factory=dict)
    _draft_cost: dict[str, _Recent] = field(default_factory=dict)
    _verify: dict[int, _Recent] = field(default_factory=dict)
    _fitted: tuple[float, float] | None = None  # the verify-time line, refitted after each new measurement
    last_prediction: tuple[float, float] | None = None
    split_pass: bool = False
    _refed: float = 0.0  # tokens a round's pass reads beyond its draft and next token (decaying mean)
    _plain_s: float = 0.0  # what the tokens so far would have cost as plain steps
    _probe_loss_s: float = 0.0  # what probes cost beyond that
    _since_draft: dict[str, int] = field(default_factory=dict)  # rounds since each drafter last drafted
    _probing: str | None = None  # the drafter the last `choose` granted a probe

    def acceptance(self, source: str) -> float:
        """The current estimate of the per-token acceptance rate of a drafter."""
        return self._acceptance.setdefault(source, _Acceptance()).mean

    def draft_cost(self, source: str) -> float | None:
        """Seconds per drafted token of a drafter (None before a timed round measured it)."""
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
            self._fitted = self._fit()
        return self._fitted

    def _fit(self) -> tuple[float, float]:
        points = sorted((width, recent.median) for width, recent in self._verify.items())
        # Verifying more tokens cannot cost less: a width measured slower than a wider one was measured in
        # worse conditions (a plain step right after a draft round is not pipelined), so it takes the wider
        # one's time. Otherwise a plain step that only ever ran cold would look dearer than drafting.
        for index in range(len(points) - 2, -1, -1):
            points[index] = (points[index][0], min(points[index][1], points[index + 1][1]))
        if len(points) == 1:
            width, seconds = points[0]
            base = seconds / (1 + PRIOR_SLOPE * (width - 1))
            return base, PRIOR_SLOPE * base
        xs = [w - 1 for w, _ in points]
        ys = [s for _, s in points]
        mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
        var = sum((x - mean_x) ** 2 for x in xs)
        slope = max(0.0, sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / var)
        base = max(mean_y - slope * mean_x, 1e-9)
        return base, slope

    def choose(self, source: str, available: int) -> int:
        """The K (at most `available`) with the best predicted tokens per second; 0 means decode normally.

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
        base, slope = self._line()
        a = self.acceptance(source)
        best_k, best_rate, previous = 0, MARGIN / base, 0.0
        for k in range(1, limit + 1):
            rate = expected_tokens(a, k) / self._round_time(k, cost)
            if rate > best_rate:
                best_k, best_rate = k, rate
            if rate < previous:
                break
            previous = rate
        plain = 1.0 / base
        self.last_prediction = (best_rate if best_k else plain, plain)
        if best_k == 0 and self._may_probe(source, min(limit, PROBE_DRAFT), cost):
            self._probing = source
            return min(limit, PROBE_DRAFT)
        return best_k

    def _round_time(self, k: int, cost: float) -> float:
        """Predicted seconds of a round drafting K tokens, until the target's next pass is as far as a plain
        step would have brought it.

        Measured on SmolLM2 here: after a pipelined plain step, a draft's verify is a pass of its own and the
        round after it cannot be pipelined (124 ms against 62 ms plain), so drafting 1-2 tokens at 33%
        acceptance ran at 0.90x standard while the one-pass formula predicted a gain.
        """
        base, slope = self._line()
        return k * cost + base + slope * (k + self._refed) + (base if self.split_pass else 0.0)

    def _round_loss(self, k: int, cost: float, emitted: float) -> float:
        """Predicted seconds a round of K drafted tokens costs beyond `emitted` plain steps."""
        return max(0.0, self._round_time(k, cost) - emitted * self._line()[0])

    def _may_probe(self, source: str, k: int, cost: float) -> bool:
        """Whether a K-token probe of a drafter fits the probe budget even if all of it is rejected."""
        if self._since_draft.get(source, 0) < PROBE_GAP:
            return False
        return self._probe_loss_s + self._round_loss(k, cost, 1) <= PROBE_SHARE * self._plain_s

    def observe(self, costs: RoundCosts) -> None:
        for estimate in self._acceptance.values():
            estimate.decay()
        self._account(costs)
        if costs.drafted:
            estimate = self._acceptance.setdefault(costs.source, _Acceptance())
            estimate.accepted += costs.accepted
            estimate.rejected += 1 if costs.accepted < costs.drafted else 0
        if costs.drafted and costs.draft_token_s is not None:
            self._draft_cost.setdefault(costs.source, _Recent()).add(costs.draft_token_s)
        if costs.verify_s is not None:
            self._verify.setdefault(costs.pass_width, _Recent()).add(costs.verify_s)
            self._fitted = None
        if costs.drafted:
            self._refed = DECAY * self._refed + (1 - DECAY) * (costs.pass_width - costs.drafted - 1)

    def _account(self, costs: RoundCosts) -> None:
        """Charge a probe's loss to the probe budget, and earn budget from every token emitted."""
        for source in self._since_draft:
            self._since_draft[source] += 1
        if costs.drafted:
            self._since_draft[costs.source] = 0
        if not self._verify:
            return
        emitted = costs.accepted + 1
        self._plain_s += emitted * self._line()[0]
        if self._probing is not None and costs.drafted and costs.source == self._probing:
            cost = self.draft_cost(costs.source) or 0.0
            self._probe_loss_s += self._round_loss(costs.drafted, cost, emitted)
        self._probing = None
