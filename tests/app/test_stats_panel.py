"""The side panel's numbers: here, the adaptive policy's belief after an answer (issue 27)."""

from __future__ import annotations

from app.stats_panel import StatsPanel
from engine.events import GenerationResult, GenerationStats, PolicyBelief
from tests.app.conftest import send_and_wait

GIVEN_UP = PolicyBelief("model", 0.31, 0.9, [10.0, 8.1, 7.2], 0, "K = 0: the best K (1) predicts 0.81x plain steps", 40, 96)
DRAFTING = PolicyBelief("lookup", 0.93, 0.0, [10.0, 17.5, 21.0], 2, "drafts K = 2: 2.10x plain steps predicted", 0, 300)


def finished(panel: StatsPanel, beliefs: list[PolicyBelief]) -> None:
    panel.reset("speculative")
    panel.finish(GenerationResult("text", [1, 2], ["target", "target"], "speculative", "stop", GenerationStats(policy=beliefs)))


def test_the_policy_row_says_why_and_when_it_last_drafted(qtbot) -> None:
    panel = StatsPanel()
    qtbot.addWidget(panel)
    finished(panel, [GIVEN_UP, DRAFTING])
    row = panel.values["policy"]
    assert panel._form.isRowVisible(row)
    assert row.text().splitlines() == [
        "model: K = 0: the best K (1) predicts 0.81x plain steps (last drafted 40 rounds ago)",
        "lookup: drafts K = 2: 2.10x plain steps predicted",
    ]
    assert "model: K=0 10.0, K=1 8.1, K=2 7.2 tok/s predicted" in row.toolTip()


def test_the_policy_row_is_hidden_without_an_adaptive_policy(qtbot) -> None:
    panel = StatsPanel()
    qtbot.addWidget(panel)
    finished(panel, [GIVEN_UP])
    finished(panel, [])  # a fixed K, or standard decoding
    assert not panel._form.isRowVisible(panel.values["policy"])


def test_an_adaptive_answer_shows_the_policy_s_belief(make_window, qtbot) -> None:
    window = make_window(adaptive=True, max_tokens=30)
    send_and_wait(qtbot, window, "Hello")
    row = window.stats.values["policy"]
    assert window.stats._form.isRowVisible(row) and row.text().startswith("model: ")
    window.apply_settings(window.session.params.replace(adaptive=False), "")
    send_and_wait(qtbot, window, "Hello again")
    assert not window.stats._form.isRowVisible(row)


def test_switching_chats_clears_the_previous_chat_s_numbers(make_window, qtbot) -> None:
    """Issue 22: the side panel kept the previous chat's numbers after a switch (and after New chat)."""
    window = make_window(max_tokens=20)
    send_and_wait(qtbot, window, "First chat")
    first = window.conversation_id
    assert window.stats.values["drafted"].text() != "–"
    window.new_conversation()
    assert window.stats.values["drafted"].text() == "–" and window.stats.values["tps"].text() == "–"
    send_and_wait(qtbot, window, "Second chat")
    shown = window.stats.values["tps"].text()
    window.open_conversation(window.conversation_id)  # a redraw of the same chat (a branch flip) keeps them
    assert window.stats.values["tps"].text() == shown != "–"
    window.open_conversation(first)
    assert window.stats.values["tps"].text() == "–" and window.stats.values["drafted"].text() == "–"
