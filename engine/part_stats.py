"""The speculation of one part of a thinking model's output (its reasoning, or its answer), counted apart.

A thinking model drafts well or badly in its reasoning and in its answer for different reasons, so the stats
count each part's rounds apart (`GenerationStats.thinking` and `.answering`), and a saved answer's trace is split
the same way when it is shown again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PartStats:
    """The speculation of one part of a thinking model's output (its reasoning, or its answer): the rounds most of
    whose tokens went to it, what they drafted and accepted, the tokens of that part, and (reasoning) how long it
    took."""

    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    emitted: int = 0
    tokens: int = 0
    seconds: float = 0.0

    def add_round(self, drafted: int, accepted: int, emitted: int) -> None:
        self.rounds += 1
        self.drafted += drafted
        self.accepted += accepted
        self.emitted += emitted

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_pass(self) -> float:
        return self.emitted / self.rounds if self.rounds else 0.0

    def speculation(self) -> str:
        """e.g. '64% of 120 drafted accepted, 2.1 tokens per pass' (or 'nothing drafted')."""
        if not self.drafted:
            return "nothing drafted"
        return f"{self.acceptance_rate:.0%} of {self.drafted} drafted accepted, {self.tokens_per_pass:.1f} tokens per pass"


def split_rounds(records: list[dict]) -> tuple[PartStats, PartStats]:
    """(thinking, answering): the speculation of a saved answer's rounds (trace records), by the part most of each
    round's tokens went to, so that acceptance while thinking and while answering can be read apart."""
    thinking, answering = PartStats(), PartStats()
    for record in records:
        part = thinking if record.get("reasoning") else answering
        part.add_round(int(record["verified"]), int(record["accepted"]), int(record["emitted"]))
    return thinking, answering
