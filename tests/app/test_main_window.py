"""The main window over the tiny models: chatting, colours, stats, Stop, the toggle, Compare, errors, restarts."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from app.main_window import MainWindow
from app.palette import origin_colour
from engine.events import RoundEvent, TokenEvent
from tests.app.conftest import send_and_wait


def colour_runs(view) -> list[tuple[str, str]]:
    """(text, origin) of each coloured run in a token view, read back from the document's formats."""
    from app.chat_view import ORIGIN_PROPERTY

    runs = []
    for fragment in view.token_fragments():
        origin = fragment.charFormat().property(ORIGIN_PROPERTY)
        colour = origin_colour(origin, view.palette())
        assert (colour is None) or fragment.charFormat().background().color() == colour
        runs.append((fragment.text(), origin))
    return runs


def test_an_answer_streams_as_coloured_tokens_with_the_right_origins(make_window, qtbot) -> None:
    window = make_window(max_tokens=60)
    window.markdown_action.setChecked(False)  # keep the coloured view after the answer
    batches: list[list[object]] = []
    window.session.answer_events.connect(lambda answer, events: batches.append(events))
    result = send_and_wait(qtbot, window, "What is speculative decoding?")
    streamed = [e for batch in batches for e in batch if isinstance(e, TokenEvent)]
    assert [e.origin for e in streamed] == result.origins
    answer = window.chat.messages[-1]
    assert [r.origin for r in answer.body.runs] == result.origins
    assert {"accepted", "corrected", "bonus"} <= {origin for _, origin in colour_runs(answer.body)}
    assert answer.body.toPlainText() == result.text
    # Hovering a token tells its origin and round.
    first = next(run for run in answer.body.runs if run.text)
    assert answer.body.origin_at(0) == (first.origin, first.round)


def test_token_colours_and_the_legend_follow_a_switch_to_dark_mode(make_window, qtbot) -> None:
    from PySide6.QtGui import QColor, QPalette

    window = make_window(max_tokens=40)
    window.markdown_action.setChecked(False)
    send_and_wait(qtbot, window, "Hello")
    answer = window.chat.messages[-1]
    light_runs = colour_runs(answer.body)
    dark = QPalette(window.palette())
    dark.setColor(QPalette.ColorRole.Window, QColor("#202020"))
    dark.setColor(QPalette.ColorRole.Base, QColor("#181818"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#e8e8e8"))
    window.setPalette(dark)
    assert colour_runs(answer.body) == light_runs  # every tint now the dark mode's (colour_runs checks each)
    chip = window.stats.legend.chips["accepted"]
    assert origin_colour("accepted", chip.palette()).name() in chip.styleSheet()
    assert origin_colour("accepted", chip.palette()) != origin_colour("accepted", QPalette(QColor("#f0f0f0")))


def test_the_stats_panel_and_the_stats_line_follow_the_answer(make_window, qtbot) -> None:
    window = make_window()
    result = send_and_wait(qtbot, window, "Hello")
    values = {k: v.text() for k, v in window.stats.values.items()}
    assert values["drafted"] == str(result.stats.drafted)
    assert values["accepted"].startswith(str(result.stats.accepted))
    assert values["per_pass"] == f"{result.stats.tokens_per_pass:.2f}"
    assert values["ttft"].endswith(" s") and values["memory"] != "–"
    assert window.stats.rate_curve.getData()[0] is not None
    assert window.chat.messages[-1].stats.text() == result.summary()


def test_stop_ends_the_answer_and_keeps_what_was_generated(make_window, qtbot) -> None:
    window = make_window(max_tokens=900)
    with qtbot.waitSignal(window.session.answer_events, timeout=30_000):
        window.input.setPlainText("Tell me a long story")
        window.send()
    with qtbot.waitSignal(window.session.answer_finished, timeout=30_000) as blocker:
        window.send_button.click()  # the Send button reads Stop while generating
    result = blocker.args[1]
    assert result.finish_reason == "cancelled" and 0 < len(result.tokens) < 900
    answer = window.chat.messages[-1]
    assert answer.text == result.text and "(stopped)" in answer.stats.text()
    stored = window.session.store.messages(window.conversation_id)[-1]
    assert stored.content == result.text and stored.finish == "cancelled"
    assert window.send_button.text() == "Send"


def test_the_toggle_switches_to_standard_decoding_without_reloading(make_window, qtbot) -> None:
    window = make_window()
    loaded = []
    window.session.pair_loaded.connect(loaded.append)
    send_and_wait(qtbot, window, "Hello")
    window.speculative_action.setChecked(False)
    result = send_and_wait(qtbot, window, "And again")
    assert set(result.origins) == {"target"} and result.mode == "standard"
    assert loaded == []
    assert window.session.settings.params().mode == "standard"


def test_compare_runs_both_ways_and_shows_the_speedup(make_window, qtbot) -> None:
    window = make_window()
    send_and_wait(qtbot, window, "Hello")
    window.compare()
    dialog = window.compare_dialog
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    standard, speculative = dialog.results["standard"], dialog.results["speculative"]
    assert standard.mode == "standard" and speculative.mode == "speculative"
    assert standard.tokens == speculative.tokens  # greedy: the same answer either way
    ratio = speculative.stats.generation_tps / standard.stats.generation_tps
    assert f"{ratio:.2f}x" in dialog.speedup.text()
    assert dialog.views["speculative"].toPlainText() == speculative.text
    dialog.close()


def test_an_engine_error_shows_a_readable_message_and_loses_nothing(make_window, qtbot) -> None:
    window = make_window()
    send_and_wait(qtbot, window, "Hello")
    with qtbot.waitSignal(window.session.answer_failed, timeout=30_000):
        window.input.setPlainText("word " * 1200)
        window.send()
    assert not window.error_banner.isHidden()
    assert window.error_banner.text().startswith("The prompt is ") and "Traceback" not in window.error_banner.text()
    assert [m.role for m in window.chat.messages] == ["user", "assistant", "user"]
    assert not window.session.busy and window.send_button.isEnabled()


def test_a_model_that_cannot_load_shows_why(make_window, tmp_path: Path) -> None:
    window = make_window(pair=(str(tmp_path / "missing"), ""))
    assert window.session.pair is None
    assert "No model at" in window.error_banner.text()
    window.input.setPlainText("Hello")
    window.send()
    assert "No models are loaded" in window.error_banner.text()


def test_settings_and_conversations_survive_a_restart(make_window, qtbot) -> None:
    window = make_window()
    params = window.session.params.replace(temperature=0.7, top_k=20, num_draft=6, max_tokens=12)
    window.apply_settings(params, "Answer in French.")
    result = send_and_wait(qtbot, window, "Bonjour")
    conversation = window.conversation_id
    window.close()

    again = make_window(pair=None, keep_settings=True)
    assert again.session.params.temperature == 0.7 and again.session.params.top_k == 20 and again.session.params.num_draft == 6
    assert again.session.system_prompt == "Answer in French."
    assert again.session.settings.pair() is not None
    titles = [again.conversations.list.item(i).text() for i in range(again.conversations.list.count())]
    assert titles == ["Bonjour"]
    again.open_conversation(conversation)
    assert [m.text for m in again.chat.messages] == ["Bonjour", result.text]
    assert again.chat.messages[1].stats.text() == result.summary()
    assert [r.origin for r in again.chat.messages[1].body.runs] == result.origins


def test_enter_sends_and_shift_enter_starts_a_new_line(make_window, qtbot) -> None:
    window = make_window()
    qtbot.keyClicks(window.input, "line one")
    qtbot.keyClick(window.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.input, "line two")
    assert window.input.toPlainText() == "line one\nline two"
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        qtbot.keyClick(window.input, Qt.Key.Key_Return)
    assert window.chat.messages[0].text == "line one\nline two" and window.input.toPlainText() == ""


def test_regenerate_replaces_the_last_answer(make_window, qtbot) -> None:
    window = make_window(temperature=1.0, top_p=1.0)
    send_and_wait(qtbot, window, "Hello")
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as blocker:
        window.chat.messages[-1].regenerate_button.click()
    assert len(window.chat.messages) == 2
    stored = window.session.store.messages(window.conversation_id)
    assert [m.role for m in stored] == ["user", "assistant"] and stored[1].content == blocker.args[1].text


def test_copy_puts_a_message_on_the_clipboard(make_window, qtbot) -> None:
    from PySide6.QtGui import QGuiApplication

    window = make_window()
    result = send_and_wait(qtbot, window, "Hello")
    window.chat.messages[-1].copy_button.click()
    assert QGuiApplication.clipboard().text() == result.text


def test_markdown_toggle_switches_finished_answers_between_views(make_window, qtbot) -> None:
    window = make_window()
    window.markdown_action.setChecked(True)
    send_and_wait(qtbot, window, "Hello")
    answer = window.chat.messages[-1]
    window.markdown_action.setChecked(False)
    assert colour_runs(answer.body)
    window.markdown_action.setChecked(True)
    assert not colour_runs(answer.body)
    assert window.session.settings.show_markdown()


def test_conversations_can_be_renamed_deleted_and_exported(make_window, qtbot, tmp_path: Path, monkeypatch) -> None:
    window = make_window()
    result = send_and_wait(qtbot, window, "Hello")
    conversation = window.conversation_id
    monkeypatch.setattr("app.main_window.QInputDialog.getText", lambda *a, **k: ("Greetings", True))
    window.rename_conversation(conversation)
    assert window.conversations.list.item(0).text() == "Greetings"
    out = tmp_path / "chat.md"
    window.export_conversation(conversation, str(out))
    assert out.read_text().startswith("# Greetings\n\n**You:**\n\nHello\n\n**Assistant:**\n\n" + result.text.rstrip())
    window.delete_conversation(conversation)
    assert window.conversations.list.count() == 0 and window.chat.messages == []


def test_closing_during_generation_stops_cleanly(make_window, qtbot) -> None:
    window = make_window(max_tokens=900)
    with qtbot.waitSignal(window.session.answer_events, timeout=30_000):
        window.input.setPlainText("A long story please")
        window.send()
    conversation = window.conversation_id
    window.close()
    assert window.session.engine_thread.isFinished() and window.session.download_thread.isFinished()
    from app.conversations import ConversationStore
    from engine.models.app_paths import data_dir

    store = ConversationStore(data_dir() / "conversations.sqlite3")
    answer = store.messages(conversation)[-1]
    assert answer.role == "assistant" and answer.content and answer.finish == "cancelled"
    store.close()


def test_switching_pairs_while_generating_cancels_the_answer_first(make_window, qtbot, tiny_dirs) -> None:
    window = make_window(max_tokens=900)
    with qtbot.waitSignal(window.session.answer_events, timeout=30_000):
        window.input.setPlainText("A long story please")
        window.send()
    finished, loaded = [], []
    window.session.answer_finished.connect(lambda answer, result, summary: finished.append(result))
    window.session.pair_loaded.connect(loaded.append)
    window.session.load_pair(str(tiny_dirs[0]), "")
    qtbot.waitUntil(lambda: bool(finished and loaded), timeout=60_000)
    assert finished[0].finish_reason == "cancelled" and len(finished[0].tokens) < 900
    assert window.session.pair.draft is None and window.pair_label.text() == "tiny-target (prompt lookup)"


def test_settings_opened_without_a_draft_model_keep_the_chosen_drafter(make_window, qtbot, tiny_dirs, monkeypatch) -> None:
    """With no draft model loaded answers draft by prompt lookup, but the choice of the draft model is kept for
    the next pair that has one (opening Settings used to save "lookup" for good)."""
    window = make_window(pair=(str(tiny_dirs[0]), ""))
    assert window.session.pair is not None and window.session.pair.draft is None
    assert window.session.params.drafter == "model"
    assert window.session.effective_params().drafter == "lookup"
    monkeypatch.setattr("app.main_window.SettingsDialog.exec", lambda self: 1)  # OK without changes
    window.open_settings()
    assert window.session.params.drafter == "model"
    assert window.session.settings.params().drafter == "model"
    with qtbot.waitSignal(window.session.pair_loaded, timeout=30_000):
        window.session.load_pair(str(tiny_dirs[0]), str(tiny_dirs[1]))
    drafters: list[str] = []
    window.session.answer_events.connect(lambda answer, events: drafters.extend(e.drafter for e in events if isinstance(e, RoundEvent)))
    send_and_wait(qtbot, window, "Hello")
    assert "model" in drafters
    assert window.session.effective_params().drafter == "model"
