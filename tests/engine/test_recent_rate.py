"""The trailing-window rate behind download speed and the stats panel's tokens per second."""

from __future__ import annotations

import pytest

from engine.recent_rate import RecentRate


def test_no_rate_until_time_has_passed() -> None:
    rate = RecentRate(3.0)
    assert rate.per_second() is None
    rate.add(10.0, 0)
    assert rate.per_second() is None
    rate.add(10.0, 5)
    assert rate.per_second() is None


def test_the_rate_is_the_growth_across_the_window_only() -> None:
    rate = RecentRate(3.0)
    rate.add(0.0, 0)
    rate.add(1.0, 100)  # a fast start...
    rate.add(2.0, 110)
    assert rate.per_second() == pytest.approx(55.0)
    rate.add(5.0, 140)  # ...that has left the 3-second window
    assert rate.per_second() == pytest.approx((140 - 110) / 3.0)


def test_the_two_latest_samples_are_kept_after_a_long_pause() -> None:
    rate = RecentRate(3.0)
    rate.add(0.0, 0)
    rate.add(10.0, 20)
    assert rate.per_second() == pytest.approx(2.0)


def test_a_batch_just_after_the_last_one_is_no_spike() -> None:
    rate = RecentRate(3.0)
    for now, total in ((0.0, 0), (5.0, 1), (10.0, 2), (10.01, 3)):  # 0.2 tokens/s, then a final batch at once
        rate.add(now, total)
    assert rate.per_second() == pytest.approx((3 - 1) / 5.01)
