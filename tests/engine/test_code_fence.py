"""The fence that quotes a text whole."""

from __future__ import annotations

from engine.code_fence import fence_for


def test_a_text_without_a_long_run_of_backticks_gets_three() -> None:
    assert fence_for("plain `code` and ``two``") == "```"


def test_the_fence_is_longer_than_any_run_of_three_or_more_in_the_text() -> None:
    assert fence_for("```python\nx\n```\n`````") == "``````"
