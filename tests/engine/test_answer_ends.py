"""Whether a saved answer can go on from where it ended."""

from __future__ import annotations

import pytest

from engine.answer_ends import can_go_on


@pytest.mark.parametrize(
    ("role", "content", "finish", "can"),
    [
        ("assistant", "Hello, th", "length", True),  # cut at its token limit
        ("assistant", "Hel", "cancelled", True),  # stopped
        ("assistant", "He", "error", True),
        ("assistant", "H", "", True),  # saved while streaming, then a crash
        ("assistant", "Hello.", "stop", False),  # ended itself
        ("assistant", "Hello", "context", False),  # the context is full
        ("assistant", "", "length", False),  # nothing to go on from
        ("user", "Hi", "", False),
    ],
)
def test_only_an_answer_that_ended_short_of_its_own_end_can_go_on(role: str, content: str, finish: str, can: bool) -> None:
    assert can_go_on(role, content, finish) is can
