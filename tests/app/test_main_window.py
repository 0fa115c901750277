"""The main window over the tiny models: chatting, colours, stats, Stop, the toggle, Compare, errors, restarts."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction

from app.palette import ghost_colour, origin_colour
from app.round_timeline import time_colours
from engine.events import TokenEvent
from engine.params import GenerationParams
from tests.app.conftest import choose_drafter, press, send_and_wait, start_long_answer, stream_in_a_second_chat


def colour_runs(view) -> list[tuple[str, str]]:
    """(text, origin) of each coloured run in a token view, read back from the document's formats."""
    from app.token_view import ORIGIN_PROPERTY

    runs = []
    for fragment in view.token_fragments():
        origin = fragment.charFormat().property(ORIGIN_PROPERTY)
        colour = origin_colour(origin, view.palette())
        assert (colour is None) or fragment.charFormat().background().color() == colour
        runs.append((fragment.text(), origin))
    return runs


def test_an_answer_streams_as_coloured_tokens_with_the_right_origins(make_window, qtbot) -> None:
    window = make_window(max_tokens=60)
    window.toolbar.markdown_action.setChecked(False)  # keep the coloured view after the answer
    batches: list[list[object]] = []
    window.session.answer_events.connect(lambda answer, events: batches.append(events))
    result = send_and_wait(qtbot, window, "What is speculative decoding?")
    streamed = [e for batch in batches for e in batch if isinstance(e, TokenEvent)]
    assert [e.origin for e in streamed] == result.origins
    answer = window.chat.messages[-1]
    assert [r.origin for r in answer.body.runs] == result.origins
    assert {"accepted", "corrected", "bonus"} <= {origin for _, origin in colour_runs(answer.body)}
    assert answer.body.answer_text() == result.text
    # The tokens' own text, line breaks aside (they end blocks, not fragments): the rest is ghost text.
    assert "".join(text for text, _ in colour_runs(answer.body)) == result.text.replace("\n", "")
    # Hovering a token tells its origin and round.
    first = next(run for run in answer.body.runs if run.text)
    position = next(answer.body.token_fragments()).position()  # (rejected drafts may come before it)
    assert answer.body.origin_at(position) == (first.origin, first.round)


def test_token_colours_and_the_legend_follow_a_switch_to_dark_mode(make_window, qtbot) -> None:
    from PySide6.QtGui import QColor, QPalette

    window = make_window(max_tokens=40)
    window.toolbar.markdown_action.setChecked(False)
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
    # The visualizer too: ghost text, the timeline's bars, the histogram's and the cost plot's axes.
    ghost_colours = {f.charFormat().foreground().color().name() for f in answer.body.ghost_fragments()}
    assert ghost_colours == {ghost_colour(answer.body.palette()).name()} != {ghost_colour(QPalette(QColor("#f0f0f0"))).name()}
    canvas = window.stats.timeline.canvas
    _, verify = canvas.bar_rects(max(range(len(canvas.rounds)), key=lambda i: canvas.bar_rects(i)[1].height()))
    assert canvas.grab().toImage().pixelColor(verify.center()) == time_colours(dark=True)[1]
    for plot in (window.stats.histogram, window.stats.cost_card.plot):
        assert plot.getAxis("left").textPen().color() == QColor("#e8e8e8")


def test_the_stats_panel_and_the_stats_line_follow_the_answer(make_window, qtbot) -> None:
    window = make_window()
    result = send_and_wait(qtbot, window, "Hello")
    values = {k: v.text() for k, v in window.stats.values.items()}
    assert values["drafted"] == str(result.stats.drafted)
    assert values["accepted"].startswith(str(result.stats.accepted))
    assert values["per_pass"] == f"{result.stats.tokens_per_pass:.2f}"
    assert values["ttft"].endswith(" s") and values["memory"] != "–"
    assert window.stats.plots.rate_curve.getData()[0] is not None
    assert window.chat.messages[-1].stats.text() == result.summary()


def test_lenient_answers_say_lossy_in_the_label_the_panel_and_the_stats_line(make_window, qtbot) -> None:
    window = make_window(lenience=0.4, temperature=1.0)
    assert window.toolbar.pair_label.text().endswith("· speculative, draft model · LOSSY (lenience 0.4)")
    result = send_and_wait(qtbot, window, "Hello")
    assert window.stats.values["mode"].text() == "speculative, LOSSY (lenience 0.4)"
    assert "LOSSY (lenience 0.4)" in window.chat.messages[-1].stats.text() == result.summary()
    window.toolbar.speculative_action.setChecked(False)  # standard decoding is exact whatever the setting
    assert "LOSSY" not in window.toolbar.pair_label.text()


def test_stop_ends_the_answer_and_keeps_what_was_generated(make_window, qtbot) -> None:
    window = make_window(max_tokens=900)
    start_long_answer(qtbot, window)
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
    window.toolbar.speculative_action.setChecked(False)
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
    standard, speculative = dialog.results["standard"], dialog.results["model"]
    assert standard.mode == "standard" and speculative.mode == "speculative"
    assert standard.tokens == speculative.tokens  # greedy: the same answer either way
    ratio = speculative.stats.generation_tps / standard.stats.generation_tps
    assert f"{ratio:.2f}x" in dialog.speedup.text()
    assert dialog.views["model"].answer_text() == speculative.text
    dialog.close()


def test_a_message_too_long_for_the_model_goes_back_to_the_input_and_the_chat_goes_on(make_window, qtbot) -> None:
    """It used to stay in the chat, so every later message failed the same way: the chat was dead."""
    window = make_window()
    send_and_wait(qtbot, window, "Hello")
    long_message = "word " * 1200
    with qtbot.waitSignal(window.session.prompt_rejected, timeout=30_000):
        window.input.setPlainText(long_message)
        window.send()
    banner = window.error_banner.text()
    assert not window.error_banner.isHidden() and banner.startswith("The prompt is ") and "back in the box" in banner
    assert "Traceback" not in banner and "Error" not in banner.split(":")[0]
    assert window.input.toPlainText() == long_message.strip()  # nothing lost
    assert [m.role for m in window.chat.messages] == ["user", "assistant"]
    assert [m.role for m in window.session.store.messages(window.conversation_id)] == ["user", "assistant"]
    assert not window.session.busy and window.send_button.isEnabled()
    window.input.clear()
    send_and_wait(qtbot, window, "A short one")  # the chat goes on
    assert [m.role for m in window.chat.messages] == ["user", "assistant", "user", "assistant"]


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
    window.toolbar.markdown_action.setChecked(True)
    send_and_wait(qtbot, window, "Hello")
    answer = window.chat.messages[-1]
    window.toolbar.markdown_action.setChecked(False)
    assert colour_runs(answer.body)
    window.toolbar.markdown_action.setChecked(True)
    assert not colour_runs(answer.body)
    assert window.session.settings.show_markdown()


def test_conversations_can_be_renamed_deleted_and_exported(make_window, qtbot, tmp_path: Path, monkeypatch) -> None:
    from PySide6.QtWidgets import QMessageBox

    window = make_window()
    result = send_and_wait(qtbot, window, "Hello")
    conversation = window.conversation_id
    monkeypatch.setattr("app.conversation_list.QInputDialog.exec", lambda self: 1)
    monkeypatch.setattr("app.conversation_list.QInputDialog.textValue", lambda self: "Greetings")
    window.conversations.rename(conversation)
    assert window.conversations.list.item(0).text() == "Greetings"
    out = tmp_path / "chat.md"
    window.conversations.export(conversation, str(out))
    assert out.read_text().startswith("# Greetings\n\n**You:**\n\nHello\n\n**Assistant:**\n\n" + result.text.rstrip())
    answers = iter([QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Yes])
    monkeypatch.setattr("app.conversation_list.QMessageBox.question", lambda *a, **k: next(answers))
    window.conversations.confirm_delete(conversation)  # the user thinks better of it
    assert window.conversations.list.count() == 1 and len(window.chat.messages) == 2
    window.conversations.confirm_delete(conversation)
    assert window.conversations.list.count() == 0 and window.chat.messages == []


def test_closing_during_generation_stops_cleanly(make_window, qtbot) -> None:
    window = make_window(max_tokens=900)
    start_long_answer(qtbot, window)
    conversation = window.conversation_id
    window.close()
    assert window.session.engine_thread.isFinished() and window.session.download_thread.isFinished()
    from engine.conversations import ConversationStore
    from engine.models.app_paths import data_dir

    store = ConversationStore(data_dir() / "conversations.sqlite3")
    answer = store.messages(conversation)[-1]
    assert answer.role == "assistant" and answer.content and answer.finish == "cancelled"
    store.close()


def test_switching_pairs_while_generating_cancels_the_answer_first(make_window, qtbot, tiny_dirs) -> None:
    window = make_window(max_tokens=900)
    start_long_answer(qtbot, window)
    finished, loaded = [], []
    window.session.answer_finished.connect(lambda answer, result, summary: finished.append(result))
    window.session.pair_loaded.connect(loaded.append)
    window.session.load_pair(str(tiny_dirs[0]), "")
    qtbot.waitUntil(lambda: bool(finished and loaded), timeout=60_000)
    assert finished[0].finish_reason == "cancelled" and len(finished[0].tokens) < 900
    assert window.session.pair.draft is None and window.toolbar.pair_label.text() == "tiny-target · speculative, Automatic"


def test_the_pair_label_says_how_the_next_answer_is_decoded(make_window) -> None:
    """It used to ignore the drafter setting and the Speculative toggle."""
    window = make_window()
    assert window.toolbar.pair_label.text() == "tiny-target ← draft tiny-draft · speculative, draft model"
    window.toolbar.speculative_action.setChecked(False)
    assert window.toolbar.pair_label.text().endswith("· standard decoding")
    window.toolbar.speculative_action.setChecked(True)
    choose_drafter(window, "lookup")
    assert window.toolbar.pair_label.text().endswith("· speculative, lookup")
    choose_drafter(window, "model")
    window.apply_settings(window.session.params.replace(ssd=True), "")
    assert window.toolbar.pair_label.text().endswith("· speculative, draft model (SSD)")
    choose_drafter(window, "auto")
    assert window.toolbar.pair_label.text().endswith("· speculative, Automatic")  # Automatic runs no SSD


def test_the_stats_panel_shows_ssd_figures_only_when_ssd_pre_drafted(make_window, qtbot) -> None:
    window = make_window()
    send_and_wait(qtbot, window, "Hello")
    assert window.stats.values["ssd"].isHidden()
    window.apply_settings(window.session.params.replace(ssd=True, fanout=2), "")
    result = send_and_wait(qtbot, window, "Hello again")
    s = result.stats
    assert not window.stats.values["ssd"].isHidden()
    assert window.stats.values["ssd"].text().endswith(f"{s.predraft_wasted} of {s.predrafted} pre-drafted tokens unused "
                                                      f"· {s.hidden_draft_s:.2f} s drafting hidden")


def test_stop_in_ssd_mode_ends_the_answer_and_leaves_no_thread_behind(make_window, qtbot) -> None:
    import threading

    before = threading.active_count()
    window = make_window(max_tokens=900, ssd=True, fanout=3)
    start_long_answer(qtbot, window, until=lambda round: round.predrafted > 0)
    with qtbot.waitSignal(window.session.answer_finished, timeout=30_000) as blocker:
        window.stop()
    result = blocker.args[1]
    assert result.finish_reason == "cancelled" and result.stats.predrafted > 0 and len(result.tokens) < 900
    window.apply_settings(window.session.params.replace(max_tokens=20), "")  # still SSD; 900 tokens cost 4 CPU s
    assert_usable(qtbot, window)
    window.close()
    qtbot.waitUntil(lambda: threading.active_count() <= before, timeout=60_000)


def assert_usable(qtbot, window) -> None:
    """Not stuck: Send reads Send and works, Enter sends, Compare is available."""
    qtbot.waitUntil(lambda: not window.session.busy, timeout=30_000)
    assert window.send_button.text() == "Send" and window.send_button.isEnabled() and window.toolbar.compare_action.isEnabled()
    result = send_and_wait(qtbot, window, "Are you still there?")
    assert result.tokens and window.chat.messages[-1].text == result.text


@pytest.mark.parametrize("away", ["open another conversation", "delete the streaming conversation", "start a new chat"])
def test_leaving_a_streaming_conversation_never_leaves_the_window_stuck(make_window, qtbot, monkeypatch, away: str) -> None:
    """Switching or deleting mid-answer left the button on "Stopping…" for good (and Enter, New chat and Compare
    dead), with "Internal C++ object (TokenTextView) already deleted" on stderr."""
    window = make_window(max_tokens=30)
    first, streaming = stream_in_a_second_chat(qtbot, window)
    with qtbot.waitSignal(window.session.answer_finished, timeout=30_000) as finished:
        if away == "open another conversation":
            window.open_conversation(first)
        elif away == "delete the streaming conversation":
            window.delete_conversation(streaming)
        else:
            window.new_conversation()
    assert finished.args[1].finish_reason in ("cancelled", "stop")  # stopped, or ended on its own just before
    if away == "open another conversation":
        assert window.conversation_id == first and [m.text for m in window.chat.messages][0] == "First chat"
        stored = window.session.store.messages(streaming)[-1]
        assert stored.finish == finished.args[1].finish_reason and stored.content == finished.args[1].text  # saved
    if away == "delete the streaming conversation":
        assert not window.session.store.exists(streaming)
    window.apply_settings(window.session.params.replace(max_tokens=20), "")
    assert_usable(qtbot, window)


def test_a_data_folder_that_refuses_writes_is_said_and_the_chat_still_works(make_window, qtbot) -> None:
    """Nothing happened (a new chat only cleared the input; in an old one no answer came), and only stderr said
    'attempt to write a readonly database'. Simulated with SQLite's query_only, which raises that same error."""
    window = make_window()
    send_and_wait(qtbot, window, "Saved on disk")
    window.session.store.db.execute("PRAGMA query_only = ON")
    result = send_and_wait(qtbot, window, "Kept in memory")
    assert not window.error_banner.isHidden() and "Conversations cannot be saved" in window.error_banner.text()
    assert "writable" in window.error_banner.text() and "OperationalError" not in window.error_banner.text()
    assert [m.text for m in window.chat.messages][-2:] == ["Kept in memory", result.text]
    window.new_conversation()
    send_and_wait(qtbot, window, "A new chat too")
    assert window.conversations.list.count() == 2


def test_a_damaged_model_is_named_with_what_to_do(make_window, qtbot, tiny_dirs, tmp_path: Path) -> None:
    """A safetensors file cut short showed "Something went wrong: RuntimeError: [load_safetensors] ..."."""
    import shutil

    damaged = tmp_path / "damaged-model"
    shutil.copytree(tiny_dirs[0], damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    window = make_window(pair=(str(damaged), ""))
    banner = window.error_banner.text()
    assert "damaged-model's weights are damaged" in banner and "download or copy it again" in banner
    assert "Something went wrong" not in banner and "RuntimeError" not in banner


def test_a_failed_load_keeps_the_working_pair(make_window, qtbot, tmp_path: Path) -> None:
    """A failed load dropped the loaded pair ("No models loaded") and the status bar stayed on "Loading …"."""
    window = make_window()
    label = window.toolbar.pair_label.text()
    with qtbot.waitSignal(window.session.pair_failed, timeout=30_000):
        window.session.load_pair(str(tmp_path / "nowhere"), "")
    assert window.session.pair is not None and window.toolbar.pair_label.text() == label
    assert "Loading" not in window.statusBar().currentMessage() and "still in use" in window.statusBar().currentMessage()
    assert "No model at" in window.error_banner.text()
    send_and_wait(qtbot, window, "Still answering?")
    with qtbot.waitSignal(window.session.pair_loaded, timeout=30_000):
        window.session.load_pair(window.session.pair.target, window.session.pair.draft or "")
    assert window.error_banner.isHidden()  # the banner does not outlive a successful load


def test_regenerate_waits_while_an_answer_streams(make_window, qtbot) -> None:
    """It looked active during streaming and did nothing."""
    window = make_window(max_tokens=900)
    window.apply_settings(window.session.params.replace(max_tokens=30), "")
    send_and_wait(qtbot, window, "Hello")
    window.apply_settings(window.session.params.replace(max_tokens=900), "")
    # After "Hello" the tiny pair ends "Write a poem" at 33 tokens, which a busy machine let finish before the check.
    start_long_answer(qtbot, window, text="Write a long poem")  # 900 tokens in this context
    previous_answer = window.chat.messages[1]
    assert previous_answer.regenerate_button.isHidden() or not previous_answer.regenerate_button.isEnabled()
    assert all(not m.delete_button.isEnabled() and not m.edit_button.isEnabled() for m in window.chat.messages)
    with qtbot.waitSignal(window.session.answer_finished, timeout=30_000):
        window.stop()
    last = window.chat.messages[-1]
    assert last.regenerate_button.isEnabled() and last.delete_button.isEnabled()


def test_editing_an_earlier_question_keeps_the_old_branch_to_flip_back_to(make_window, qtbot) -> None:
    window = make_window(max_tokens=12)
    first = send_and_wait(qtbot, window, "What is MLX?")
    send_and_wait(qtbot, window, "And Metal?")
    question = window.chat.messages[0]
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as edited:
        question.start_editing()
        question.editor.setPlainText("What is CUDA?")
        question.send_edit.click()
    assert [m.text for m in window.chat.messages] == ["What is CUDA?", edited.args[1].text]
    assert window.chat.messages[0].branch_label.text() == "2/2" and not window.chat.messages[0].previous_branch.isHidden()
    window.chat.messages[0].previous_branch.click()
    assert [m.text for m in window.chat.messages][:2] == ["What is MLX?", first.text] and len(window.chat.messages) == 4
    window.chat.messages[0].next_branch.click()
    assert window.chat.messages[0].text == "What is CUDA?"


def test_regenerate_keeps_the_old_answer_as_a_branch_and_messages_can_be_deleted(make_window, qtbot) -> None:
    window = make_window(max_tokens=12, temperature=1.0, top_p=1.0)
    first = send_and_wait(qtbot, window, "Hello")
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as again:
        window.chat.messages[-1].regenerate_button.click()
    answer = window.chat.messages[-1]
    assert answer.text == again.args[1].text and answer.branch_label.text() == "2/2"
    answer.previous_branch.click()
    assert window.chat.messages[-1].text == first.text
    window.chat.messages[-1].delete_button.click()
    assert [m.text for m in window.chat.messages] == ["Hello", again.args[1].text]  # the other branch is shown
    window.chat.messages[0].delete_button.click()
    assert window.chat.messages == [] and window.session.store.messages(window.conversation_id) == []


def test_search_finds_chats_by_their_words(make_window, qtbot) -> None:
    window = make_window(max_tokens=4)
    send_and_wait(qtbot, window, "Tell me about pelicans")
    window.new_conversation()
    send_and_wait(qtbot, window, "Tell me about trains")
    window.conversations.search.setText("pelican")
    assert [window.conversations.list.item(i).text() for i in range(window.conversations.list.count())] == ["Tell me about pelicans"]
    window.conversations.search.clear()
    assert window.conversations.list.count() == 2


def test_right_clicking_another_chat_keeps_the_one_shown_highlighted(make_window, qtbot, monkeypatch) -> None:
    """It highlighted the right-clicked chat while the pane kept showing the other."""
    window = make_window(max_tokens=4)
    send_and_wait(qtbot, window, "One")
    window.new_conversation()
    send_and_wait(qtbot, window, "Two")
    shown = window.conversation_id
    monkeypatch.setattr(window.conversations, "show_menu", lambda menu, at: None)
    other = window.conversations.list.item(1)
    window.conversations.list.setCurrentItem(other)  # what a right-click does to a list
    window.conversations._menu(window.conversations.list.visualItemRect(other).center())
    assert window.conversations.list.currentItem().data(0x0100) == shown == window.conversation_id


def test_a_chat_s_own_system_prompt_goes_with_its_requests(make_window, qtbot) -> None:
    window = make_window(max_tokens=4)
    window.apply_settings(window.session.params, "Global instructions.")
    send_and_wait(qtbot, window, "Hi")
    requests = []
    window.session._requests.generate.connect(requests.append)
    window.conversations.edit_system_prompt(window.conversation_id, "Answer like a pirate.")
    send_and_wait(qtbot, window, "Hi again")
    window.new_conversation()
    send_and_wait(qtbot, window, "Elsewhere")
    assert [r.system_prompt for r in requests] == ["Answer like a pirate.", "Global instructions."]


def test_keyboard_shortcuts(make_window, qtbot, monkeypatch) -> None:
    """Esc stops, Ctrl+, opens Settings, Ctrl+K the models, Ctrl+N a new chat (Cmd on macOS), each a menu item's keys."""
    window = make_window(max_tokens=900)
    keyed = {keys.toString() for action in window.findChildren(QAction) for keys in action.shortcuts()}
    assert keyed == {"Esc", "Ctrl+N", "Ctrl+K", "Ctrl+,", "Ctrl+Q", "Ctrl++", "Ctrl+=", "Ctrl+-", "Ctrl+0", "Ctrl+Alt+S"}
    start_long_answer(qtbot, window)
    with qtbot.waitSignal(window.session.answer_finished, timeout=30_000) as finished:
        press(window, "Esc")
    assert finished.args[1].finish_reason in ("cancelled", "stop") and not window.session.busy
    opened = []
    monkeypatch.setattr("app.main_window.SettingsDialog.exec", lambda self: opened.append("settings") or 0)
    press(window, "Ctrl+,")
    assert opened == ["settings"]
    press(window, "Ctrl+K")
    assert window.picker.isVisible()
    window.picker.hide()
    press(window, "Ctrl+N")
    assert window.conversation_id is None and window.chat.messages == []
    assert window.focusWidget() is window.input  # what is typed next is the new chat's first message


@pytest.mark.parametrize("how", ["close the window", "Ctrl+Q"])
def test_quitting_mid_answer_asks_first(make_window, qtbot, monkeypatch, how: str) -> None:
    """Ctrl+Q (Cmd+Q) did nothing, idle or mid-answer: only the title bar's close quit."""
    from PySide6.QtWidgets import QMessageBox

    window = make_window(max_tokens=900)
    quit = window.close if how == "close the window" else lambda: press(window, "Ctrl+Q")
    window.ask_before_quitting = True
    start_long_answer(qtbot, window)
    monkeypatch.setattr("app.main_window.QMessageBox.question", lambda *a, **k: QMessageBox.StandardButton.No)
    quit()
    assert not window.session.engine_thread.isFinished() and window.session.busy  # still running
    monkeypatch.setattr("app.main_window.QMessageBox.question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    quit()
    assert window.session.engine_thread.isFinished()


def test_ctrl_q_quits_an_idle_window_without_asking(make_window, monkeypatch) -> None:
    window = make_window()
    window.ask_before_quitting = True
    monkeypatch.setattr("app.main_window.QMessageBox.question", lambda *a, **k: pytest.fail("asked while idle"))
    press(window, "Ctrl+Q")
    assert window.session.engine_thread.isFinished()


def test_tokens_per_pass_is_not_shown_when_nothing_is_drafted(make_window, qtbot) -> None:
    """It read 0.93-0.99 in standard mode (a last pass ending on EOS counts with no token)."""
    window = make_window()
    window.toolbar.speculative_action.setChecked(False)
    send_and_wait(qtbot, window, "Hello")
    assert window.stats.values["per_pass"].text().startswith("–")
    window.toolbar.speculative_action.setChecked(True)
    result = send_and_wait(qtbot, window, "Hello again")
    assert window.stats.values["per_pass"].text() == f"{result.stats.tokens_per_pass:.2f}"


def test_settings_let_k_yield_to_adaptive(qtbot) -> None:
    from app.settings_dialog import SettingsDialog

    dialog = SettingsDialog(GenerationParams(adaptive=True, drafter="model"), "")
    qtbot.addWidget(dialog)
    assert not dialog.num_draft.isEnabled() and dialog.max_draft.isEnabled()
    dialog.adaptive.setChecked(False)
    assert dialog.num_draft.isEnabled() and not dialog.max_draft.isEnabled()


def test_compare_halves_and_plot_axes_stay_aligned(make_window, qtbot) -> None:
    window = make_window()
    send_and_wait(qtbot, window, "Hello")
    window.compare()
    grid = window.compare_dialog.layout()
    assert grid.columnStretch(0) == grid.columnStretch(1) == 1
    qtbot.waitUntil(lambda: len(window.compare_dialog.results) == 2, timeout=60_000)
    window.compare_dialog.close()
    assert window.stats.plots.accept_plot.getViewBox().linkedView(0) is window.stats.plots.rate_plot.getViewBox()


def test_the_window_never_shows_a_traceback_or_an_exception_name(make_window, qtbot, monkeypatch) -> None:
    """Every error an answer can fail with, ours and anything else (test_readable_errors' lists), in turn in one
    window: each is said in the banner without a traceback, its class name or an errno, and leaves the window idle
    for the next message. One window for all eighteen, as a user meets them: what is checked is what each failure
    shows, which a fresh window per error (eighteen pair loads) proved no more of."""
    from tests.app.test_readable_errors import OTHER_ERRORS, OUR_ERRORS

    window = make_window()
    for error in [cls("This is what happened, and what to do.") for cls in OUR_ERRORS] + OTHER_ERRORS:

        def failing(*args, error=error, **kwargs):
            raise error
            yield  # a generator, as generate_stream is

        monkeypatch.setattr("engine.decoding.generation.generate_stream", failing)
        window.new_conversation()  # a failure redraws its chat: one question each, not all before it
        with qtbot.waitSignal(window.session.answer_failed, timeout=30_000) as failed:
            window.input.setPlainText("Hello")
            window.send()
        banner = window.error_banner.text()
        assert banner.startswith(failed.args[1]) and not window.error_banner.isHidden() and not window.session.busy, error
        assert "Traceback" not in banner and type(error).__name__ not in banner and "Errno" not in banner, banner


def test_with_no_models_loaded_send_and_compare_wait_for_a_pair(make_window, qtbot) -> None:
    """A first launch (no pair saved) showed Send and Compare live before any model was chosen: the controls followed
    the session only from its first signal on."""
    window = make_window(pair=None)
    assert window.session.pair is None
    assert not window.send_button.isEnabled() and not window.toolbar.compare_action.isEnabled()


def test_an_export_that_cannot_be_written_says_why(make_window, qtbot, tmp_path: Path) -> None:
    """Exporting a chat into a folder gone since (a removed drive) or read-only raised a traceback and said nothing."""
    window = make_window()
    send_and_wait(qtbot, window, "Hello")
    window.conversations.export(window.conversation_id, str(tmp_path / "gone" / "chat.md"))
    assert not window.error_banner.isHidden()
    assert f"Could not export the chat to {tmp_path / 'gone' / 'chat.md'}" in window.error_banner.text()
    assert "Choose another folder" in window.error_banner.text() and not window.statusBar().currentMessage().startswith("Exported")


def test_the_next_launch_shows_the_chat_shown_at_the_last_close(make_window, qtbot) -> None:
    """A walker relaunched and found an empty new chat, the one they were in a click away in the sidebar."""
    window = make_window(max_tokens=4)
    send_and_wait(qtbot, window, "Remember me")
    chat = window.conversation_id
    window.close()
    again = make_window(keep_settings=True)
    assert again.conversation_id == chat and again.chat.messages[0].text == "Remember me"
    again.new_conversation()
    again.close()
    assert make_window(keep_settings=True).conversation_id is None  # a new chat was shown: a new chat it is
