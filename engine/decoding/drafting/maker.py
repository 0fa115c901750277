"""The maker contract: what every drafter kind's round module gets to make an answer's drafter from.

Each row of the registry (`engine/drafter_kinds.py`) names its round module, and every round module has one entry,
`make_drafter(given: MakerInputs) -> Drafter`: the decoder looks it up by the row and calls it, for one chosen
drafter as for each of Automatic's candidates, so no kind is spelled out where drafters are made. One signature for
every kind means each gets all a round could be made from and takes what it needs: lookup its policy and the
saved chats, the draft model its cache and whether it may draft ahead (SSD), a drafter that hears the target's
hidden states its side of the chat (`given.state(ItsState)`, made by the same module's `load_state`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ...params import GenerationParams
    from ..constraint import Constraint
    from ..pair import ModelPair
    from ..policy.draft_length import DraftPolicy
    from ..sampling import Warper
    from .drafter_state import DrafterState

State = TypeVar("State", bound="DrafterState")


@dataclass(frozen=True)
class MakerInputs:
    """What a drafter maker gets.

    Attributes:
        pair: the loaded models: the draft model's cache, a listening drafter's state, what is kept per settings
            (`pair.policy`), the saved chats lookup drafts from.
        params: the answer's settings (SSD, its fanout, whether lookup reads the saved chats).
        warper: the sampling warp shared with the target.
        policy: what the drafter chooses its K through (under Automatic, the ballot all candidates share).
        settings: the key the pair keeps this answer's policy under: keep anything else per settings beside it.
        constraint: the grammar the output must follow (None: free text).
        automatic: the drafter is one of Automatic's candidates: asked each round what it would draft, so it must
            not draft ahead of being asked.
        compared: for a Compare run, its prompt (lookup leaves out saved chats that asked its question); None else.
        kind: the kind being made: one module may be the round side of several registered kinds (the benchmark's
            scripted drafters), each with its own state in the pair.
    """

    pair: ModelPair
    params: GenerationParams
    warper: Warper
    policy: DraftPolicy
    settings: tuple[object, ...] = ()
    constraint: Constraint | None = None
    automatic: bool = False
    compared: object = None
    kind: str = ""

    def state(self, made: type[State]) -> State:
        """The pair's side of the chat of the kind being made, as the class its round module's `load_state` makes
        (`made`): what a maker drafts from, typed."""
        state = self.pair.drafter_state(self.kind)
        if not isinstance(state, made):
            raise TypeError(f"The {self.kind} drafter's state is a {type(state).__name__}, where its maker reads a "
                            f"{made.__name__}: its row's round module makes both.")
        return state
