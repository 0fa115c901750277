"""The adaptive policy's running estimates: a drafter's acceptance rate, a cost's recent measurements, and the
target's verify time across widths (`verify_line`), learnt from what each round measured (`RoundCosts`).

They forget on purpose: a drafter that was bad for a while can turn good (an answer starts copying), and one
that was good can turn bad, and in a long-lived app or server the policy must see both within tens of rounds.
"""

from __future__ import annotations

import random
import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

PRIOR_ACCEPTED, PRIOR_REJECTED = 0.5, 1.5  # a prior mean of 0.25: unproven drafts must earn their rounds
DECAY = 0.99  # per round, on the acceptance counts
EVIDENCE = 48  # the most draft tokens an acceptance estimate weighs: older evidence is scaled away
SAMPLES = 9  # measurements kept per cost, of which the median is used
PULL = 2.0  # draft tokens' worth of a drafter's pooled rate that each block position's estimate starts from
PRIOR_SLOPE = 0.2  # extra verify cost per draft token, relative to one target step, before any measurement


def expected_tokens(acceptance: float | Sequence[float], k: int) -> float:
    """E(K): tokens a round emits on average, the correction/bonus token included. `acceptance`: one rate for every
    draft token, or each position's rate given the tokens before it were accepted (`PositionalAcceptance`)."""
    if isinstance(acceptance, (int, float)):
        if acceptance >= 1.0:
            return float(k + 1)
        return (1.0 - acceptance ** (k + 1)) / (1.0 - acceptance)
    total = run = 1.0
    for rate in acceptance[:k]:
        run *= rate
        total += run
    return total


class RecentCost:
    """The latest SAMPLES measurements of one cost; its estimate is their median."""

    def __init__(self) -> None:
        self.samples: deque[float] = deque(maxlen=SAMPLES)

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def verify_line(verify: dict[int, RecentCost]) -> tuple[float, float]:
    """(t1, slope) of the straight line t(L) = t1 + slope*(L - 1) through the verify times measured at each width L.

    Through the plain steps' time once they are measured, with the median of the slopes the wider widths give (a
    least-squares line let one width timed in a busy spell put t1 near zero: plain steps looked free, and nothing
    drafted or was probed again); a least-squares fit before that; from one width, a prior slope of PRIOR_SLOPE * t1.
    """
    points = sorted((width, recent.median) for width, recent in verify.items())
    # Verifying more tokens cannot cost less: a width measured slower than a wider one was measured in
    # worse conditions (a plain step right after a draft round is not pipelined), so it takes the wider
    # one's time. Otherwise a plain step that only ever ran cold would look dearer than drafting.
    for index in range(len(points) - 2, -1, -1):
        points[index] = (points[index][0], min(points[index][1], points[index + 1][1]))
    if len(points) == 1:
        width, seconds = points[0]
        base = seconds / (1 + PRIOR_SLOPE * (width - 1))
        return base, PRIOR_SLOPE * base
    if points[0][0] == 1:  # plain steps measured: the line goes through their time, and each wider width says a slope
        base = points[0][1]
        return base, statistics.median((seconds - base) / (width - 1) for width, seconds in points[1:])
    xs, ys = [w - 1 for w, _ in points], [s for _, s in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    slope = max(0.0, sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / var)
    base = max(mean_y - slope * mean_x, 1e-9)
    return base, slope


@dataclass
class AcceptanceEstimate:
    """A Beta(PRIOR_ACCEPTED, PRIOR_REJECTED) posterior over "the next draft token is accepted", counting the
    accepted tokens and the one rejection of each round, forgetting at a known rate (DECAY a round, and at most
    EVIDENCE tokens' worth)."""

    accepted: float = 0.0
    rejected: float = 0.0

    @property
    def mean(self) -> float:
        return (PRIOR_ACCEPTED + self.accepted) / (PRIOR_ACCEPTED + PRIOR_REJECTED + self.accepted + self.rejected)

    def decay(self) -> None:
        self.accepted *= DECAY
        self.rejected *= DECAY

    def add(self, accepted: int, rejected: int) -> None:
        """Count a round's verdict, keeping at most EVIDENCE tokens' worth: a draft that turns bad (or good) is
        seen within about that many draft tokens, however long it was good (or bad) before."""
        self.accepted += accepted
        self.rejected += rejected
        total = self.accepted + self.rejected
        if total > EVIDENCE:
            self.accepted *= EVIDENCE / total
            self.rejected *= EVIDENCE / total

    def sample(self, rng: random.Random) -> float:
        """A plausible acceptance rate: a draw from the Beta posterior."""
        return rng.betavariate(PRIOR_ACCEPTED + self.accepted, PRIOR_REJECTED + self.rejected)


@dataclass
class PositionalAcceptance:
    """A block drafter's acceptance at each position of its block: position i's rate is "token i is accepted, given
    the tokens before it were", counted like `AcceptanceEstimate` (DECAY a round, EVIDENCE tokens' worth at most)
    and starting from the drafter's pooled rate with PULL tokens' weight, so that positions seldom or never
    verified take that rate until they are. A DFlash block is drafted in parallel: its later positions are
    usually worse than its first, which one rate for all of them cannot say."""

    accepted: list[float] = field(default_factory=list)
    rejected: list[float] = field(default_factory=list)

    def add(self, accepted: int, drafted: int) -> None:
        """Count a round: positions 1..accepted accepted, the next one rejected (unless all were accepted)."""
        while len(self.accepted) < drafted:
            self.accepted.append(0.0)
            self.rejected.append(0.0)
        for i in range(accepted):
            self.accepted[i] += 1
        if accepted < drafted:
            self.rejected[accepted] += 1
        for i in range(drafted):
            total = self.accepted[i] + self.rejected[i]
            if total > EVIDENCE:
                self.accepted[i] *= EVIDENCE / total
                self.rejected[i] *= EVIDENCE / total

    def decay(self) -> None:
        self.accepted = [a * DECAY for a in self.accepted]
        self.rejected = [r * DECAY for r in self.rejected]

    def rates(self, pooled: float, positions: int) -> list[float]:
        """Each of the first `positions` positions' estimated rate, given the drafter's pooled rate."""
        counts = list(zip(self.accepted, self.rejected))[:positions]
        counts += [(0.0, 0.0)] * (positions - len(counts))
        return [(a + PULL * pooled) / (a + r + PULL) for a, r in counts]


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
