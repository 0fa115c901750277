"""A draft, and the protocol every source of drafts follows.

A draft is what one round proposes: up to K token ids and, for a draft model, the warped distributions q they
were sampled from (the acceptance rule needs q; prompt lookup proposes without one, so its q is a point mass).
Two drafters exist: a draft model (`draft_model.py`) and prompt lookup (`prompt_lookup.py`). The speculative
round asks them in order and verifies the first draft offered; a round nobody drafts for is a plain target step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import mlx.core as mx


@dataclass
class Draft:
    """A proposal for one round.

    Attributes:
        tokens: (K,) the proposed ids, lazy for a draft model.
        count: K, known on the host.
        probs: (K, V) the distributions the tokens were sampled from; None for greedy drafts and for
            point-mass proposals (prompt lookup).
        source: the policy's name for where it came from: "model", "lookup", "lookup+copying", or "none".
        draft_s: host seconds spent proposing (device time too when `timed`).
        catch_up_s: seconds of that spent prefilling context the draft model had missed.
        timed: whether the host waited for the draft, so that draft_s is its cost.
    """

    tokens: mx.array
    count: int
    probs: mx.array | None
    source: str
    draft_s: float = 0.0
    catch_up_s: float = 0.0
    timed: bool = False

    @property
    def drafter(self) -> str:
        """What a RoundEvent calls the drafter: "model", "lookup" or "none"."""
        return "lookup" if self.source.startswith("lookup") else self.source


NO_DRAFT = Draft(tokens=mx.array([], dtype=mx.uint32), count=0, probs=None, source="none")


def point_draft(ids: list[int], source: str, draft_s: float) -> Draft:
    """A draft proposed on the host without distributions (prompt lookup)."""
    return Draft(mx.array(ids, dtype=mx.uint32), len(ids), None, source, draft_s=draft_s, timed=True)


class Drafter(Protocol):
    """A source of drafts for the speculative round."""

    def start(self, context: list[int]) -> None:
        """A generation begins after `context` (already in the target's cache)."""

    def propose(self, context: list[int], limit: int) -> Draft:
        """Up to `limit` tokens to follow `context`, or NO_DRAFT to leave the round to the next drafter."""

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        """Every round's verdict, whoever drafted: the draft verified (NO_DRAFT for a plain round), its ids as
        read back from the device, and how many the target accepted."""

    @property
    def idle(self) -> bool:
        """Whether the next round will likely be plain as far as this drafter goes, so that the target's next
        pass may be queued before the current token is read (as standard decoding does)."""
