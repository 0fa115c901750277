"""The chat column of the main window: what an answer's lines say while it streams and when it ends, deleting with
Undo, and a narrow window."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QColor, QPalette

from app.message_widget import cut_notice
from app.palette import notice_colour
from engine.events import PrefillEvent, TokenEvent
from tests.app.conftest import send_and_wait, start_long_answer, stream_in_a_second_chat


def watch_stats_lines(window) -> list[str]:
    """Every stats line the streaming answer shows, read after each batch of its events reached the window."""
    seen: list[str] = []

    def read(answer, events) -> None:  # StreamingAnswer, list
        view = window.answer_view
        seen.append("" if view is None or view.stats.isHidden() else view.stats.text())

    window.session.answer_events.connect(read)
    return seen


def test_a_regenerated_answer_never_says_interrupted_while_it_streams(make_window, qtbot) -> None:
    """The redraw that shows the new branch read the answer from the store, where it has no finish yet, as an
    answer a crash cut short: "(interrupted)" stood under it until it ended."""
    window = make_window(max_tokens=30, temperature=1.0)
    send_and_wait(qtbot, window, "Hello")
    seen = watch_stats_lines(window)
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as finished:
        window.chat.messages[-1].regenerate_button.click()
        streaming = window.chat.messages[-1]
        assert streaming.stats.isHidden() and streaming.branch_label.text() == "2/2"
        qtbot.waitUntil(lambda: len(seen) > 0, timeout=30_000)
    assert seen and all("interrupted" not in line for line in seen)
    assert window.chat.messages[-1].stats.text() == finished.args[2]


def test_an_edited_question_s_answer_never_says_interrupted_while_it_streams(make_window, qtbot) -> None:
    window = make_window(max_tokens=30)
    send_and_wait(qtbot, window, "What is MLX?")
    seen = watch_stats_lines(window)
    question = window.chat.messages[0]
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as finished:
        question.start_editing()
        question.editor.setPlainText("What is Metal?")
        question.send_edit.click()
        assert window.chat.messages[-1].stats.isHidden()
        qtbot.waitUntil(lambda: len(seen) > 0, timeout=30_000)
    assert seen and all("interrupted" not in line for line in seen)
    assert window.chat.messages[-1].stats.text() == finished.args[2]


def test_an_answer_saved_without_a_finish_still_says_interrupted_after_a_restart(make_window) -> None:
    window = make_window()
    store = window.session.store
    conversation = store.create("Cut off")
    store.add_message(conversation, "user", "Hello")
    answer = store.add_message(conversation, "assistant", "")
    store.update_message(answer, "Half an ans", [["Half", "target", 0], [" an ans", "target", 1]])  # as kill -9 leaves it
    window.close()
    again = make_window(pair=None)
    again.open_conversation(conversation)
    assert again.chat.messages[-1].text == "Half an ans" and again.chat.messages[-1].stats.text() == "(interrupted)"


def test_an_answer_cut_at_the_token_limit_ends_with_a_mark_and_says_why(make_window, qtbot) -> None:
    window = make_window(max_tokens=12)
    result = send_and_wait(qtbot, window, "Tell me a long story")
    assert result.finish_reason == "length"  # the tiny random model never stops in 12 tokens
    answer = window.chat.messages[-1]
    notice = "Cut at the 12-token limit: Continue goes on from here (Max tokens in Settings sets the limit)."
    assert not answer.notice.isHidden() and answer.notice.text() == notice
    assert answer.body.toPlainText().rstrip().endswith("…") and answer.text == result.text  # Copy copies the answer
    window.toolbar.markdown_action.setChecked(False)  # the coloured view marks it too
    assert answer.body.toPlainText().endswith("…") and answer.body.answer_text() == result.text
    window.open_conversation(window.conversation_id)  # and so does the saved answer
    answer = window.chat.messages[-1]
    assert answer.notice.text() == notice and answer.body.toPlainText().endswith("…")
    light = answer.notice.styleSheet()
    dark = QPalette(window.palette())
    dark.setColor(QPalette.ColorRole.Window, QColor("#202020"))
    window.setPalette(dark)
    assert notice_colour(dark).name() in answer.notice.styleSheet() != light  # readable in dark mode too


def test_continue_goes_on_with_an_answer_cut_at_its_limit_in_the_same_message(make_window, qtbot) -> None:
    """A cut answer was a dead end: raise Max tokens and answer the whole question again. Continue goes on from its
    last token, as the engine would have (greedy: the answer a limit twice as high gives), its rounds numbered on."""
    window = make_window(max_tokens=20)
    longer = send_and_wait(qtbot, window, "Tell me a long story")
    window.new_conversation()
    window.apply_settings(window.session.params.replace(max_tokens=10), "")
    first = send_and_wait(qtbot, window, "Tell me a long story")
    answer = window.chat.messages[-1]
    assert first.finish_reason == "length" and not answer.continue_button.isHidden()
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as finished:
        answer.continue_button.click()
    assert window.chat.messages[-1] is answer and len(window.chat.messages) == 2  # the same message grew
    saved = window.session.store.messages(window.conversation_id)[-1]
    assert saved.content == answer.text == longer.text and finished.args[1].finish_reason == "length"
    rounds = [record["round"] for record in saved.trace]
    assert rounds == list(range(len(rounds))) and {run[2] for run in saved.runs} <= set(rounds)  # numbered on
    assert answer.stats.text().startswith("Went on: ") and answer.continue_button.isVisible() == answer.isVisible()
    window.send_button.setEnabled(True)
    send_and_wait(qtbot, window, "And then?")
    assert window.chat.messages[1].continue_button.isHidden()  # only the chat's last answer goes on


def test_a_stopped_answer_goes_on_too_and_a_finished_one_does_not(make_window, qtbot) -> None:
    window = make_window(max_tokens=900)
    start_long_answer(qtbot, window)
    with qtbot.waitSignal(window.session.answer_finished, timeout=30_000):
        window.stop()
    stopped = window.chat.messages[-1]
    saved = window.session.store.messages(window.conversation_id)[-1]
    assert saved.finish == "cancelled" and not stopped.continue_button.isHidden()
    window.apply_settings(window.session.params.replace(max_tokens=4), "")
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as went_on:
        stopped.continue_button.click()
    assert window.session.store.messages(window.conversation_id)[-1].content == saved.content + went_on.args[1].text
    window.open_conversation(window.conversation_id)  # as saved: cut at 4 tokens, and still able to go on
    assert not window.chat.messages[-1].continue_button.isHidden()
    window.session.store.update_message(saved.id, "Done.", finish="stop")
    window.open_conversation(window.conversation_id)
    assert window.chat.messages[-1].continue_button.isHidden()


def test_an_answer_that_ends_while_the_user_is_elsewhere_calls_them_back(make_window, qtbot, monkeypatch) -> None:
    """A long answer on a slow machine: the user switches to another app, and nothing said it had finished."""
    alerted = []
    monkeypatch.setattr("app.message_widget.QApplication.alert", lambda widget, ms=0: alerted.append(widget))
    window = make_window(max_tokens=6)
    assert not window.isActiveWindow()  # the offscreen platform activates no window: as if the user were elsewhere
    send_and_wait(qtbot, window, "Tell me a story")
    assert alerted == [window]


def test_only_cut_answers_get_a_notice() -> None:
    assert cut_notice("stop", 30) == cut_notice("cancelled", 30) == ""
    assert "context" in cut_notice("context", 30) and "new chat" in cut_notice("context", 30)


def rows(window) -> list[tuple]:
    """Every saved message of the conversation shown, every column (all branches)."""
    return window.session.store.db.execute(
        "SELECT * FROM messages WHERE conversation_id = ? ORDER BY id", (window.conversation_id,)).fetchall()


def texts(window) -> list[str]:
    return [m.text for m in window.chat.messages]


def test_delete_takes_the_message_and_what_followed_and_undo_puts_them_all_back(make_window, qtbot) -> None:
    window = make_window(max_tokens=8, temperature=1.0)
    send_and_wait(qtbot, window, "First")
    send_and_wait(qtbot, window, "Second")
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        window.chat.messages[-1].regenerate_button.click()  # a second branch, hidden behind the first
    window.chat.messages[-1].previous_branch.click()
    shown, saved = texts(window), rows(window)
    window.chat.messages[2].delete_button.click()
    assert texts(window) == shown[:2] and len(rows(window)) == 2
    assert not window.undo_banner.isHidden() and window.undo_banner.label.text() == "Deleted the message and the one after it."
    assert window.undo_banner.undo_button.text() == "Undo (20 s)"  # it counts down: it went without notice
    window.undo_banner.show_time_left(12_300)
    assert window.undo_banner.undo_button.text() == "Undo (13 s)"
    window.undo_banner.undo_button.click()
    assert texts(window) == shown and rows(window) == saved  # both branches, the one that was shown still shown
    assert window.chat.messages[-1].branch_label.text() == "1/2" and window.undo_banner.isHidden()
    window.chat.messages[0].delete_button.click()
    assert window.chat.messages == [] and window.undo_banner.label.text() == "Deleted the message and the 3 after it."
    window.undo_banner.undo_button.click()
    assert texts(window) == shown and rows(window) == saved


def test_undo_never_overwrites_what_changed_after_the_delete(make_window, qtbot) -> None:
    window = make_window(max_tokens=8)
    send_and_wait(qtbot, window, "First")
    send_and_wait(qtbot, window, "Second")
    window.chat.messages[-1].delete_button.click()
    window.session.store.add_message(window.conversation_id, "assistant", "Written meanwhile")
    window.undo_banner.undo_button.click()
    assert "changed after the delete" in window.error_banner.text() and not window.error_banner.isHidden()
    assert [m.content for m in window.session.store.messages(window.conversation_id)][-1] == "Written meanwhile"


def test_a_new_answer_withdraws_the_undo(make_window, qtbot) -> None:
    window = make_window(max_tokens=8)
    send_and_wait(qtbot, window, "First")
    window.chat.messages[-1].delete_button.click()
    assert not window.undo_banner.isHidden()
    send_and_wait(qtbot, window, "Again")
    assert window.undo_banner.isHidden()


def test_at_900_by_600_the_chat_column_never_scrolls_sideways(make_window, qtbot) -> None:
    """The last answer's header (its branch arrows, Copy, Trace…, Regenerate, Delete) made the column wider than
    a 900-pixel window leaves it, once the vertical scroll bar took its share: the column scrolled sideways."""
    window = make_window(max_tokens=12, temperature=1.0)
    window.show()
    window.resize(900, 600)
    for question in ("First", "Second", "Third"):
        send_and_wait(qtbot, window, question)
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        window.chat.messages[-1].regenerate_button.click()
    qtbot.waitUntil(lambda: window.chat.verticalScrollBar().isVisible(), timeout=10_000)
    QCoreApplication.sendPostedEvents()  # the pending layouts
    QCoreApplication.processEvents()
    assert window.width() == 900 and window.chat.horizontalScrollBar().maximum() == 0
    viewport = window.chat.viewport()
    last = window.chat.messages[-1]
    assert last.branch_label.text() == "2/2" and not last.regenerate_button.isHidden()
    for button in (last.copy_button, last.trace_button, last.regenerate_button, last.delete_button):
        assert button.mapTo(viewport, button.rect().topRight()).x() < viewport.width()  # every action in sight
    window.centralWidget().setSizes([700, 10, 190])  # the splitter dragged as far as it goes
    QCoreApplication.sendPostedEvents()
    QCoreApplication.processEvents()
    assert window.chat.width() >= window.chat.widget().minimumSizeHint().width() + window.chat.verticalScrollBar().width()
    assert window.chat.horizontalScrollBar().maximum() == 0


def test_an_answer_that_ends_after_a_chat_switch_leaves_the_other_chat_s_panel_alone(make_window, qtbot) -> None:
    """Its numbers went into the panel of the chat switched to (the panel was filled before the chat was looked at).
    The panel shows the saved rounds of the chat switched to, and nothing of the answer that ended."""
    window = make_window(max_tokens=30)
    first, _ = stream_in_a_second_chat(qtbot, window)
    saved_rounds = len(window.session.store.messages(first)[-1].trace)
    with qtbot.waitSignal(window.session.answer_finished, timeout=30_000):
        window.open_conversation(first)
        assert window.stats.values["ttft"].text() == "–"  # the saved answer's, not the one streaming
    assert [window.stats.values[key].text() for key in ("ttft", "tps", "prefill")] == ["–"] * 3
    assert window.stats.rounds == saved_rounds and window.stats.values["mode"].text().endswith("(saved answer)")
    assert window.statusBar().currentMessage().startswith("Stopped the answer in the chat you left")  # not silently



def test_reading_the_message_is_said_until_the_first_token(make_window) -> None:
    """The panel's Prompt row said "reading (target): 171 / 172 tokens" only once the prompt was read, and the
    bubble nothing: the wait before the first token was silent. The engine reports before the first chunk
    (tests/engine/decoding/test_cached_model.py); the bubble and the panel say it in words."""
    window = make_window(pair=None)
    bubble = window.chat.add_message("assistant")
    bubble.append_events([PrefillEvent(0, 172)])
    window.stats.add_events([PrefillEvent(0, 172)])
    assert bubble.notice.text() == "Reading your message: 0 of 172 tokens"
    assert window.stats.values["prefill"].text() == "0 of 172 tokens read"
    assert not bubble.notice.isHidden()
    bubble.append_events([PrefillEvent(171, 172, "draft")])
    assert bubble.notice.text() == "Reading your message: 171 of 172 tokens (the draft model reads it too)"
    bubble.append_events([TokenEvent(5, "Hi", "target", 0)])
    assert bubble.notice.isHidden()
