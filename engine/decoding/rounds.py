"""What a round emits, and the protocol of the decoders that run rounds (speculative and standard).

The generation loop (`generation.py`) knows only this: it asks a decoder for one round at a time and turns the
round's tokens into events. A standard step is a round that drafted nothing, so one loop serves both modes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..events import Origin, TokenLogprob


@dataclass
class Round:
    """What one round emitted and what it cost.

    Attributes:
        tokens: the ids emitted, the accepted draft tokens first.
        origins: one per token (see `round_origins`).
        drafted: draft tokens verified (0 for a plain step).
        accepted: of those, how many the target accepted.
        drafter: "model", "mtp", "eagle3", "dflash", "lookup" or "none".
        draft_s, verify_s: host seconds spent drafting and verifying.
        draft_ids: every token the drafter proposed, rejected ones included (empty for a plain step).
        p, q: per draft token, the target's and the draft's probability of it after warping (empty when the
            trace is off).
        predicted_tps, predicted_tps_plain: the policy's prediction, when it chose this round's length, of
            tokens per second for that length and for K = 0 (None for a fixed length).
        timed: whether draft_s and verify_s measure the two apart (the host waited for the draft, and the verify
            pass was not queued by the round before).
        ssd_hit, predrafted, predraft_wasted, hidden_draft_s: SSD's figures for the round (see `Draft`).
        logprobs: per emitted token, the target's log-probabilities (empty unless asked for, see `logprobs.py`).
    """

    tokens: list[int]
    origins: list[Origin]
    drafted: int
    accepted: int
    drafter: str
    draft_s: float
    verify_s: float
    draft_ids: list[int] = field(default_factory=list)
    p: list[float] = field(default_factory=list)
    q: list[float] = field(default_factory=list)
    predicted_tps: float | None = None
    predicted_tps_plain: float | None = None
    timed: bool = False
    ssd_hit: bool | None = None
    predrafted: int = 0
    predraft_wasted: int = 0
    hidden_draft_s: float = 0.0
    logprobs: list[TokenLogprob] = field(default_factory=list)


def round_origins(drafted: int, accepted: int) -> list[Origin]:
    """Origins of a round's tokens: the accepted drafts, then a correction, a bonus, or a plain target token."""
    last: Origin = "target" if drafted == 0 else ("bonus" if accepted == drafted else "corrected")
    accepted_ones: list[Origin] = ["accepted"] * accepted
    return [*accepted_ones, last]


class Decoder(Protocol):
    """Runs the rounds of one generation."""

    def start(self, context: list[int]) -> None:
        """Begin after `context`, whose prompt part the target has prefilled."""

    def round(self, context: list[int], budget: int) -> Round:
        """One round after `context`, emitting at most `budget` tokens."""
