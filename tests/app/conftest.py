"""Fixtures for GUI tests: windows over the tiny models, with private settings and conversations."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.main_window import MainWindow
from app.settings import AppSettings
from engine.params import GenerationParams

# Greedy, fixed K: answers mix accepted, corrected and bonus tokens, and repeat exactly.
FIXED_GREEDY = dict(temperature=0.0, top_p=1.0, adaptive=False, num_draft=4, max_tokens=40)


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
            settings.save_params(GenerationParams.preset("default").replace(**{**FIXED_GREEDY, **generation}))
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


def send_and_wait(qtbot, window: MainWindow, text: str, timeout: int = 60_000):
    """Type a message, press Enter, and return the finished GenerationResult.

    Tests wait on the window's own signals: worker signals are emitted on the worker's thread.
    """
    with qtbot.waitSignal(window.session.answer_finished, timeout=timeout) as blocker:
        window.input.setPlainText(text)
        window.input.submitted.emit()
    return blocker.args[1]  # (answer, result, summary)
