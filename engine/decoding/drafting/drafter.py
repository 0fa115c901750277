"""A draft, and the protocol every source of drafts follows.

A draft is what one round proposes: up to K token ids and, for a network, the warped distributions q they were
sampled from (the acceptance rule needs q; prompt lookup proposes without one, so its q is a point mass). Each
drafter kind (`engine/drafter_kinds.py`) has its round module here under its own stem (`draft_model.py`,
`lookup.py`, `mtp.py`, `eagle3.py`, `dflash.py`, `dspark.py`), whose maker (`maker.py`) makes a `Drafter`. The
speculative round asks an answer's drafters in order and verifies the first draft offered; a round nobody drafts
for is a plain target step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

import mlx.core as mx

from ...drafter_kinds import kind_name

if TYPE_CHECKING:
    from ..acceptance import Verdict


@dataclass
class Draft:
    """A proposal for one round.

    Attributes:
        tokens: (K,) the proposed ids, lazy for a draft model.
        count: K, known on the host.
        probs: (K, V) the distributions the tokens were sampled from; None for greedy drafts and for
            point-mass proposals (prompt lookup).
        source: the policy's name for where it came from: a kind's name ("mtp", "dflash"...), or a finer name the
            policy keeps apart estimates under ("lookup+copying"), or "none".
        draft_s: host seconds spent proposing (device time too when `timed`).
        catch_up_s: seconds of that spent prefilling context the draft model had missed.
        timed: whether the host waited for the draft, so that draft_s is its cost.
        fed: how many draft tokens went into the draft model's cache, to be resolved with the verdict (None:
            all but the last).
        rows: (K+1, V) the draft's logits at every position, the one after the last token too (SSD's guesses).
        ssd_hit: True when SSD pre-drafted this draft, False when it pre-drafted but guessed the outcome wrong,
            None when nothing was pre-drafted for this round.
        predrafted: tokens SSD pre-drafted during this round's verify pass.
        predraft_wasted: pre-drafted tokens this round's outcome made useless.
        hidden_draft_s: on an SSD hit, the drafting time it saved (measured synchronous cost per token x K).
        ids: the proposed ids when the host has them already (prompt lookup, a draft under an output constraint).
    """

    tokens: mx.array
    count: int
    probs: mx.array | None
    source: str
    draft_s: float = 0.0
    catch_up_s: float = 0.0
    timed: bool = False
    fed: int | None = None
    rows: mx.array | None = None
    ssd_hit: bool | None = None
    predrafted: int = 0
    predraft_wasted: int = 0
    hidden_draft_s: float = 0.0
    ids: list[int] | None = None

    def cut(self, count: int) -> Draft:
        """The draft's first `count` tokens (an output constraint forbids the next), NO_DRAFT for none. Only lookup
        drafts are cut: a draft model drafts under the same constraint."""
        if count == self.count:
            return self
        if not count:
            return NO_DRAFT
        probs = self.probs[:count] if self.probs is not None else None
        ids = self.ids[:count] if self.ids is not None else None
        return replace(self, tokens=self.tokens[:count], count=count, probs=probs, ids=ids)

    @property
    def drafter(self) -> str:
        """What a RoundEvent calls the drafter: the name of its kind ("lookup" for "lookup+copying"), or "none"."""
        return kind_name(self.source)


NO_DRAFT = Draft(tokens=mx.array([], dtype=mx.uint32), count=0, probs=None, source="none")


def point_draft(ids: list[int], source: str, draft_s: float) -> Draft:
    """A draft proposed on the host without distributions (prompt lookup)."""
    return Draft(mx.array(ids, dtype=mx.uint32), len(ids), None, source, draft_s=draft_s, timed=True, ids=list(ids))


class Drafter(Protocol):
    """A source of drafts for the speculative round."""

    def start(self, context: list[int]) -> None:
        """A generation begins after `context` (already in the target's cache)."""

    def propose(self, context: list[int], limit: int, split_pass: bool = False) -> Draft:
        """Up to `limit` tokens to follow `context`, or NO_DRAFT to leave the round to the next drafter (`split_pass`:
        the target's next pass is already queued, for the policy's choice)."""

    def speculate(self, context: list[int], draft: Draft, verdict: Verdict) -> int:
        """Called once the round's verify pass is built (not yet read): SSD pre-drafts the next round here.
        Returns the tokens pre-drafted (0 for drafters that do not)."""

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        """Every round's verdict, whoever drafted: the draft verified (NO_DRAFT for a plain round), its ids as
        read back from the device, and how many the target accepted."""

    @property
    def idle(self) -> bool:
        """Whether the next round will likely be plain as far as this drafter goes, so that the target's next
        pass may be queued before the current token is read (as standard decoding does)."""
