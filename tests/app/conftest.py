"""Fixtures for GUI tests: windows over the tiny models, with private settings and conversations."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import pytest

from app.garbage_collection import GuiThreadCollection
from app.main_window import MainWindow
from app.settings import AppSettings
from engine.events import RoundEvent
from engine.params import GenerationParams

# Greedy, fixed K, the draft model (pinned for the window's pair): answers mix accepted, corrected and bonus tokens,
# and repeat exactly.
FIXED_GREEDY = dict(drafter="model", temperature=0.0, top_p=1.0, adaptive=False, num_draft=4, max_tokens=40)


@pytest.fixture(autouse=True)
def gui_thread_collection(qapp):
    """Garbage collected on the GUI thread only, as in the app (app/garbage_collection.py); what a test left is
    collected here, on the GUI thread, before automatic collection comes back."""
    collection = GuiThreadCollection(qapp)
    yield collection
    gc.collect()
    collection.stop()


@pytest.fixture
def make_window(qtbot, isolated_home: Path, tiny_dirs):
    """Build MainWindows; every one is closed (its worker threads quit and waited for) at teardown."""
    windows: list[MainWindow] = []

    def make(pair: tuple[str, str] | str | None = "tiny", open_picker: bool = False, keep_settings: bool = False,
             **generation: object) -> MainWindow:
        settings = AppSettings()
        if pair == "tiny":
            settings.save_pair(str(tiny_dirs[0]), str(tiny_dirs[1]))
        elif pair:
            settings.save_pair(*pair)
        if not keep_settings:
            params = GenerationParams.preset("default").replace(**{**FIXED_GREEDY, **generation})
            settings.save_params(params)
            if settings.pair():
                settings.save_pinned_drafter(*settings.pair(), params.drafter)  # the toolbar's choice, for this pair
        window = MainWindow(open_picker_if_needed=open_picker)
        window.ask_before_quitting = False  # tests that quit mid-answer say so; test_main_window checks the warning
        qtbot.addWidget(window)
        windows.append(window)
        if settings.pair():
            qtbot.waitUntil(lambda: window.session.pair is not None or not window.error_banner.isHidden(), timeout=30_000)
        return window

    yield make
    for window in windows:
        window.close()
        assert window.session.engine_thread.isFinished() and window.session.download_thread.isFinished()


def choose_drafter(window: MainWindow, drafter: str) -> None:
    """Pick a drafter in the toolbar's Drafter choice, as a click on its entry does."""
    combo = window.toolbar.drafter.combo
    index = combo.findData(drafter)
    assert index >= 0, f"{drafter} is not offered: {[combo.itemData(i) for i in range(combo.count())]}"
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def press(window: MainWindow, keys: str) -> None:
    """Trigger the menu action whose shortcut `keys` is, as Qt does when they are pressed in the window (the offscreen
    test platform need not activate a window, and key presses reach shortcuts only in the active one)."""
    from PySide6.QtGui import QAction, QKeySequence

    actions = [a for a in window.findChildren(QAction) if QKeySequence(keys) in a.shortcuts()]
    assert len(actions) == 1, f"{keys} belongs to {len(actions)} actions"
    actions[0].trigger()


def send_and_wait(qtbot, window: MainWindow, text: str, timeout: int = 60_000):
    """Type a message, press Enter, and return the finished GenerationResult.

    Tests wait on the window's own signals: worker signals are emitted on the worker's thread.
    """
    with qtbot.waitSignal(window.session.answer_finished, timeout=timeout) as blocker:
        window.input.setPlainText(text)
        window.input.submitted.emit()
    return blocker.args[1]  # (answer, result, summary)


def any_round_emitted(event: RoundEvent) -> bool:
    """A round that added a token to the answer: what a Stop needs to have something to keep."""
    return event.emitted > 0


def start_streaming(qtbot, session, send: Callable[[], None], until: Callable[[RoundEvent], bool] = any_round_emitted,
                    timeout: int = 60_000) -> None:
    """Call `send`, then return once the chat answer it started has shown a round for which `until` is true.

    Tests that Stop, cancel, switch or close mid-answer need the answer to be in the state they check (tokens
    kept, a round pre-drafted), whatever the machine's speed: the first batch of events can be the prefill alone,
    and on a busy machine a Stop sent then ends an answer with no round in it. So they wait for the round itself,
    never for a signal that merely tends to come later. An answer that ends before such a round fails here, with
    its reason, rather than later in a confusing assertion.
    """
    seen: list[bool] = []
    ended: list[object] = []

    def look(answer, events) -> None:
        seen.extend(until(e) for e in events if isinstance(e, RoundEvent))

    def end(answer, result, summary) -> None:
        ended.append(result)

    session.answer_events.connect(look)
    session.answer_finished.connect(end)
    try:
        send()
        qtbot.waitUntil(lambda: any(seen) or bool(ended), timeout=timeout)
    finally:
        session.answer_events.disconnect(look)
        session.answer_finished.disconnect(end)
    assert any(seen), f"the answer ended ({ended[0].finish_reason}) before a round the test needs"


# A prompt the tiny pair answers at length at greedy (to any max_tokens up to 900): tests that Stop, switch or quit
# mid-answer race the answer's own end otherwise ("Tell me a long story" ends after 19 tokens, which a busy
# machine let finish before the Stop).
LONG_ANSWER_PROMPT = "Write a poem"


def start_long_answer(qtbot, window: MainWindow, text: str = LONG_ANSWER_PROMPT,
                      until: Callable[[RoundEvent], bool] = any_round_emitted) -> None:
    """Type `text`, send it, and return once a round for which `until` is true is on screen (see start_streaming)."""

    def send() -> None:
        window.input.setPlainText(text)
        window.send()

    start_streaming(qtbot, window.session, send, until)


def stream_in_a_second_chat(qtbot, window: MainWindow) -> tuple[int, int]:
    """A first chat with a finished answer, then a long answer streaming in a second one: (first, second)."""
    send_and_wait(qtbot, window, "First chat")
    first = window.conversation_id
    window.new_conversation()
    window.apply_settings(window.session.params.replace(max_tokens=900), "")
    start_long_answer(qtbot, window)
    return first, window.conversation_id
