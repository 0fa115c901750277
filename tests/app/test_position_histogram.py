"""Acceptance by draft position: counts that add up to the answer's drafted and accepted tokens."""

from __future__ import annotations

import pytest

from app.position_histogram import PositionCounts
from engine.events import RoundEvent
from tests.app.conftest import send_and_wait


def test_the_histogram_sums_to_the_drafted_and_accepted_counts(make_window, qtbot) -> None:
    window = make_window(max_tokens=80)
    result = send_and_wait(qtbot, window, "Tell me a story about a ship")
    histogram = window.stats.histogram
    assert sum(histogram.counts.drafted) == result.stats.drafted
    assert sum(histogram.counts.accepted) == result.stats.accepted
    assert list(histogram.drafted_bars.opts["height"]) == histogram.counts.drafted  # what is drawn
    assert list(histogram.accepted_bars.opts["height"]) == histogram.counts.accepted


def test_acceptance_at_a_position_counts_only_drafts_that_got_that_far() -> None:
    counts = PositionCounts()
    for accepted in (3, 0, 1):  # K = 3: all accepted; rejected at 1; rejected at 2
        counts.add(RoundEvent(0, 3, accepted, accepted + 1, "model", 0.0, 0.0, draft=(1, 2, 3)))
    assert counts.drafted == [3, 3, 3] and counts.accepted == [2, 1, 1]
    assert counts.reached == [3, 2, 1]  # position 2 is reached only where position 1 was accepted
    assert counts.rate(0) == pytest.approx(2 / 3) and counts.rate(1) == 0.5 and counts.rate(2) == 1.0
