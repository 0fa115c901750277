"""The adaptive policy's running estimates: a drafter's acceptance rate, and a cost's recent measurements.

They forget on purpose: a drafter that was bad for a while can turn good (an answer starts copying), and one
that was good can turn bad, and in a long-lived app or server the policy must see both within tens of rounds.
"""

from __future__ import annotations

import random
import statistics
from collections import deque
from dataclasses import dataclass

PRIOR_ACCEPTED, PRIOR_REJECTED = 0.5, 1.5  # a prior mean of 0.25: unproven drafts must earn their rounds
DECAY = 0.99  # per round, on the acceptance counts
EVIDENCE = 48  # the most draft tokens an acceptance estimate weighs: older evidence is scaled away
SAMPLES = 9  # measurements kept per cost, of which the median is used


class RecentCost:
    """The latest SAMPLES measurements of one cost; its estimate is their median."""

    def __init__(self) -> None:
        self.samples: deque[float] = deque(maxlen=SAMPLES)

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


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
