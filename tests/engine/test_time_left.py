"""The time left of a wait, in words."""

from __future__ import annotations

from engine.time_left import duration_text, seconds_left


def test_the_time_left_is_what_remains_at_the_recent_rate() -> None:
    assert seconds_left(250, 1000, 25.0) == 30.0
    assert seconds_left(250, 1000, None) is None and seconds_left(250, 1000, 0.0) is None  # no rate yet
    assert seconds_left(1200, 1000, 25.0) == 0.0


def test_a_duration_reads_in_seconds_minutes_or_hours() -> None:
    assert [duration_text(s) for s in (4.6, 89, 7500)] == ["5 s", "1 min 29 s", "2 h 5 min"]
