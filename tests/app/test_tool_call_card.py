"""The card of one MCP call: the permission prompt's verdicts, the result folded under the call, an error's line."""

from __future__ import annotations

import pytest

from app.tool_call_card import ToolCallCard
from engine.mcp_tools.saved_calls import CallRecord


@pytest.fixture
def card(qtbot):
    card = ToolCallCard("add", '{"a": 2, "b": 40}', "demo")
    qtbot.addWidget(card)
    card.show()
    return card


def _record(state: str = "asking", result: str = "") -> CallRecord:
    return CallRecord("call_1", "add", '{"a": 2, "b": 40}', "demo", state, result)  # type: ignore[arg-type]  # a state


@pytest.mark.parametrize("verdict", ["once", "always", "deny"])
def test_each_button_sends_its_verdict_and_the_prompt_goes(qtbot, card, verdict):
    card.show_record(_record(), live=True, asking=True)
    assert card.ask_row.isVisible()
    with qtbot.waitSignal(card.decided) as signal:
        card.buttons[verdict].click()
    assert signal.args == [verdict]
    assert not card.ask_row.isVisible()


def test_a_running_call_counts_its_seconds_and_says_how_to_stop_it(qtbot, card):
    card.show_record(_record("running"), live=True)
    assert card.status.text() == "Running… 0 s (Stop ends it)"
    qtbot.waitUntil(lambda: card.status.text() == "Running… 1 s (Stop ends it)", timeout=5_000)


def test_a_result_is_folded_under_the_call_and_opens_on_a_click(card):
    card.show_record(_record("done", "42\nand more"))
    assert card.toggle.isVisible() and card.toggle.text() == "Result (2 lines)"
    assert not card.result.isVisible() and not card.status.isVisible()
    card.toggle.click()
    assert card.expanded and card.result.isVisible() and card.result.toPlainText() == "42\nand more"


def test_a_timeout_is_one_line_and_nothing_to_unfold(card):
    card.show_record(_record("failed", "Tool add timed out after 60 s."))
    assert card.status.isVisible() and card.status.text() == "Tool add timed out after 60 s."
    assert not card.toggle.isVisible() and not card.result.isVisible()


@pytest.mark.parametrize(("state", "line"), [("running", "Interrupted: SpecChat closed before add returned."),
                                             ("asking", "Not run: SpecChat closed before add was allowed or denied.")])
def test_a_call_saved_unfinished_reads_as_interrupted(card, state, line):
    card.show_record(_record(state))
    assert card.status.text() == line and not card.ask_row.isVisible()
