"""The toolbar's pair line names how the next answer is decoded, whichever drafter that is."""

from __future__ import annotations

import pytest

from app.pair_label import pair_label
from app.worker import PairInfo
from engine.params import DRAFTERS, GenerationParams

INFO = PairInfo(target="t", draft=None, target_name="Qwen3.6-27B", draft_name=None)


@pytest.mark.parametrize("drafter, label", [("mtp", "MTP head"), ("eagle3", "EAGLE-3"), ("lookup", "lookup")])
def test_the_line_names_the_drafter(drafter: str, label: str) -> None:
    """A drafter the line had no words for (mtp, eagle3) raised KeyError instead of showing the pair."""
    line = pair_label(INFO, GenerationParams(drafter=drafter), loading=False)
    assert line == f"Qwen3.6-27B · speculative, {label}"


def test_every_drafter_has_a_line() -> None:
    assert all(pair_label(INFO, GenerationParams(drafter=d), loading=False) for d in DRAFTERS)
