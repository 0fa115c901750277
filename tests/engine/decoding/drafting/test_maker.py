"""What every drafter maker gets: its kind's side of the chat, typed as the class its `load_state` makes."""

from __future__ import annotations

import pytest

from engine.decoding.drafting.dflash import DFlashState
from engine.decoding.drafting.maker import MakerInputs
from engine.params import GenerationParams


class KeptStates:
    """A pair as a maker reads it: the sides of the chat it keeps, by kind."""

    def __init__(self, **states: object) -> None:
        self.states = states

    def drafter_state(self, kind: str) -> object:
        return self.states[kind]


def test_a_maker_reads_its_kind_s_state_and_is_told_when_it_is_another_class() -> None:
    """A row whose round module makes one class of state and reads another would otherwise fail deep in a round."""
    kept = object.__new__(DFlashState)
    given = MakerInputs(KeptStates(dflash=kept, other=[]), GenerationParams(), None, None, kind="dflash")
    assert given.state(DFlashState) is kept
    with pytest.raises(TypeError, match="The other drafter's state is a list, where its maker reads a DFlashState"):
        MakerInputs(given.pair, given.params, None, None, kind="other").state(DFlashState)
