"""The side panel's numbers: here, the adaptive policy's belief after an answer (issue 27)."""

from __future__ import annotations

from app.stats_panel import StatsPanel
from engine.events import GenerationResult, GenerationStats, PolicyBelief, PrefillEvent, RoundEvent
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
        "draft model: K = 0: the best K (1) predicts 0.81x plain steps (last drafted 40 rounds ago)",
        "lookup: drafts K = 2: 2.10x plain steps predicted",
    ]
    assert "draft model, tokens/s predicted drafting 0, 1, 2… tokens a round: 10.0, 8.1, 7.2" in row.toolTip()
    assert "target steps per draft token" in row.toolTip()  # the one unit of a draft's cost, explained once


def test_the_policy_row_names_a_hidden_state_drafter_as_people_read_it(qtbot) -> None:
    """It showed the raw name ("dspark: ...")."""
    panel = StatsPanel()
    qtbot.addWidget(panel)
    finished(panel, [PolicyBelief("dspark", 0.5, 0.3, [10.0, 12.0], 1, "drafts K = 1: 1.20x plain steps predicted", 0, 9)])
    assert panel.values["policy"].text() == "DSpark drafter: drafts K = 1: 1.20x plain steps predicted"


def test_the_policy_row_speaks_plain_words_and_is_never_cut_off(qtbot) -> None:
    """Issue 32: it showed "lookup+copying: learning: ..." and its lines were cut off below the panel's bottom."""
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.resize(320, 420)
    panel.show()
    reason = "drafts nothing: at best (3 tokens a round) 0.90x as fast as without drafting; tried now and then"
    finished(panel, [PolicyBelief(name, 0.5, 0.3, [10.0, 9.0], 0, reason, 3, 40)
                     for name in ("auto", "lookup+copying", "lookup+long", "model")])
    row = panel.values["policy"]
    assert row.text().startswith("Automatic: ") and "\nlookup while copying: " in row.text() and "+" not in row.text()
    qtbot.waitUntil(lambda: row.height() >= row.heightForWidth(row.width()))
    assert row.width() <= panel.width()  # it wraps: no line runs off the panel's side


def test_the_policy_row_is_hidden_without_an_adaptive_policy(qtbot) -> None:
    panel = StatsPanel()
    qtbot.addWidget(panel)
    finished(panel, [GIVEN_UP])
    finished(panel, [])  # a fixed K, or standard decoding
    assert not panel._form.isRowVisible(panel.values["policy"])


def test_an_adaptive_answer_shows_the_policy_s_belief(make_window, qtbot) -> None:
    window = make_window(adaptive=True, max_tokens=30, drafter="auto")
    send_and_wait(qtbot, window, "Hello")
    row = window.stats.values["policy"]
    assert window.stats._form.isRowVisible(row) and row.text().startswith("Automatic: ")  # its choice and why, first
    assert "\ndraft model: " in row.text() and "\nlookup: " in row.text()  # then each candidate's estimates
    window.apply_settings(window.session.params.replace(adaptive=False), "")
    send_and_wait(qtbot, window, "Hello again")
    assert not window.stats._form.isRowVisible(row)


def test_switching_chats_shows_the_opened_chat_s_last_answer_not_the_previous_chat_s(make_window, qtbot) -> None:
    """Issue 22: the side panel kept the previous chat's numbers after a switch (and after New chat). Then a reopened
    chat left it at "–" beside an answer whose rounds were saved: it shows them now."""
    window = make_window(max_tokens=20, drafter="model")
    first_result = send_and_wait(qtbot, window, "First chat")
    first = window.conversation_id
    window.new_conversation()
    assert window.stats.values["drafted"].text() == "–" and window.stats.values["tps"].text() == "–"
    second_result = send_and_wait(qtbot, window, "Second chat, a longer question than the first")
    shown = window.stats.values["tps"].text()
    window.open_conversation(window.conversation_id)  # a redraw of the same chat, its last answer the same, keeps them
    assert window.stats.values["tps"].text() == shown != "–"
    window.open_conversation(first)
    panel, stats = window.stats, first_result.stats
    assert panel.values["mode"].text() == "speculative (saved answer)" and panel.values["tps"].text() == "–"
    assert (panel.rounds, panel.drafted, panel.accepted) == (stats.rounds, stats.drafted, stats.accepted)
    assert stats.drafted and panel.values["drafted"].text() == str(stats.drafted)
    assert panel.values["per_pass"].text() == f"{stats.tokens_per_pass:.2f}"  # as the line under the answer counts
    assert (stats.rounds, stats.drafted) != (second_result.stats.rounds, second_result.stats.drafted)
    assert len(panel.timeline.canvas.rounds) == stats.rounds and len(panel.plots.accept_curve.getData()[1]) == stats.rounds


def network_round(index: int, network_s: float | None) -> RoundEvent:
    return RoundEvent(index, 3, 2, 3, "model", 0.010, 0.030, draft=(1, 2, 3), next_token=4, network_s=network_s)


def test_the_network_row_shows_its_share_of_the_rounds_when_the_target_runs_across_macs(qtbot) -> None:
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.reset("speculative")
    panel.add_events([network_round(0, 0.010), network_round(1, 0.030)])  # 40 ms of 80 ms
    row = panel.values["network"]
    assert panel._form.isRowVisible(row) and row.text() == "50% of the time (0.04 s), across Macs"
    stats = GenerationStats(generated_tokens=6, rounds=2, generation_s=0.1, network_s=0.025)
    panel.finish(GenerationResult("text", [1] * 6, ["accepted"] * 6, "speculative", "stop", stats))
    assert row.text() == "25% of the time (0.03 s), across Macs"  # the engine's own total, at the end
    panel.reset("speculative")
    assert not panel._form.isRowVisible(row)


def test_on_one_machine_there_is_no_network_row(qtbot) -> None:
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.reset("speculative")
    panel.add_events([network_round(0, None), network_round(1, None)])
    panel.finish(GenerationResult("text", [1] * 6, ["accepted"] * 6, "speculative", "stop", GenerationStats(generation_s=0.1)))
    assert not panel._form.isRowVisible(panel.values["network"])


def test_the_cost_tab_scrolls_on_a_short_panel_instead_of_piling_its_lines_up(qtbot) -> None:
    """Issue 32: at 900x600 the Cost tab squeezed its plot and lines into the tab's height: the plot's axis title ran
    over the key under it and each section over the next, half of each line hidden."""
    from PySide6.QtWidgets import QLabel

    from tests.engine.decoding.policy.test_cost_model import round_event

    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.resize(300, 480)
    panel.tabs.setCurrentIndex(3)
    panel.show()
    card = panel.cost_card
    card.add([round_event(i, 0, 0, 0.0, 0.10) for i in range(4)] + [round_event(4 + i, 4, 2, 0.44, 0.18) for i in range(6)])
    card.redraw()
    labels = [label for label in card.findChildren(QLabel) if label.text()]
    qtbot.waitUntil(lambda: all(label.height() >= label.heightForWidth(label.width()) for label in labels))
    assert card.plot.height() >= card.plot.minimumHeight()


def test_the_cost_tab_shows_its_figures_under_the_plot_without_a_scroll(qtbot) -> None:
    """Scrolling, the plot took the whole tab and the measured figures under it were below the fold."""
    from tests.engine.decoding.policy.test_cost_model import round_event

    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.resize(300, 480)
    panel.tabs.setCurrentIndex(3)
    panel.show()
    qtbot.waitExposed(panel)
    card = panel.cost_card
    card.add([round_event(i, 0, 0, 0.0, 0.10) for i in range(4)] + [round_event(4 + i, 4, 2, 0.44, 0.18) for i in range(6)])
    card.redraw()
    page = panel.tabs.currentWidget()
    qtbot.waitUntil(lambda: card.here.height() >= card.here.heightForWidth(card.here.width()))
    assert card.here.mapTo(page, card.here.rect().topLeft()).y() + 3 * card.here.fontMetrics().height() <= page.viewport().height()


def test_while_the_message_is_read_nothing_is_said_of_drafting_yet(qtbot) -> None:
    """While the prompt was being read the panel already said "– (nothing drafted)", "0" drafted and "0" accepted, as
    if the answer had run and drafted nothing; the answer has not started."""
    from engine.events import PrefillEvent

    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.reset("speculative")
    panel.add_events([PrefillEvent(24, 1632)])
    assert [panel.values[name].text() for name in ("per_pass", "drafted", "accepted", "prefill")] == [
        "–", "–", "–", "24 of 1632 tokens read"]
    panel.add_events([RoundEvent(0, 0, 0, 1, "none", 0.0, 0.1)])
    assert panel.values["per_pass"].text() == "– (nothing drafted)" and panel.values["drafted"].text() == "0"


def test_the_panels_plots_build_no_context_menu(qtbot, monkeypatch) -> None:
    """The plots take no clicks, so pyqtgraph's right-click menus were built only to be thrown away: an eighth of
    the CPU time a window took to open. None is built now, and a right-click finds none."""
    import sys

    built: list[object] = []
    view_box_module = sys.modules["pyqtgraph.graphicsItems.ViewBox.ViewBox"]  # the package names the class as much
    monkeypatch.setattr(view_box_module, "ViewBoxMenu", lambda view: built.append(view))
    panel = StatsPanel()
    qtbot.addWidget(panel)
    plots = [panel.plots.rate_plot, panel.plots.accept_plot, panel.histogram, panel.cost_card.plot]
    assert built == [] and all(plot.getViewBox().menu is None and not plot.getPlotItem().menuEnabled() for plot in plots)


def test_an_answer_stopped_while_its_message_was_read_keeps_how_far_the_reading_got(qtbot) -> None:
    """The Prompt row said "5006 tokens" though 2,050 were read, and the speed and first token rows 0."""
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.reset("speculative")
    panel.add_events([PrefillEvent(2050, 5006)])
    panel.finish(GenerationResult("", [], [], "speculative", "cancelled", GenerationStats(prompt_tokens=5006)))
    assert panel.values["prefill"].text() == "2050 of 5006 tokens read"
    assert (panel.values["tps"].text(), panel.values["ttft"].text()) == ("–", "–")


def test_the_panel_follows_the_branch_shown_and_a_deleted_answer(make_window, qtbot) -> None:
    """After a flip to the first branch the panel kept the second's numbers, and after a delete the deleted answer's."""
    window = make_window(max_tokens=12, temperature=1.0, top_p=1.0, drafter="model")
    send_and_wait(qtbot, window, "Hello")
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        window.chat.messages[-1].regenerate_button.click()
    second = window.chat.messages[-1].message_id
    window.chat.messages[-1].previous_branch.click()
    first = window.session.store.messages(window.conversation_id)[-1]
    assert window.stats.showing == first.id != second and window.stats.rounds == len(first.trace)
    window.chat.messages[-1].delete_button.click()  # the second branch is shown again
    assert window.stats.showing == second and window.stats.values["mode"].text().endswith("(saved answer)")
