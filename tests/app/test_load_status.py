"""The status bar's line about a load: shown from the click on, one line for every stage (no "Loading…" beside
"Importing…"), and its Cancel wins in every stage of a GGUF import and of the loading after it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from tests.engine.models.test_gguf_import import TYPES, _write_synthetic


def cancel_in_stage(qtbot, window, path: Path, stage: str) -> tuple[bool, list[str]]:
    """Load `path` and click Cancel while the worker is held at the first report of a stage starting with `stage`:
    the worker waits there until the click is done, so the cancel arrives in that stage whatever the machine's load
    (a load that ran on to its end before the GUI saw the report made this test fail 1 run in 4). Returns whether
    the load ended cancelled, and every stage reported."""
    engine, held, clicked, stages, ended = window.session.engine, threading.Event(), threading.Event(), [], []

    def hold(reported: str, done: int, total: int) -> None:  # on the worker's thread (a direct connection)
        stages.append(reported)
        if reported.startswith(stage) and not held.is_set():
            held.set()
            clicked.wait(60)

    engine.load_progress.connect(hold, Qt.ConnectionType.DirectConnection)
    window.session.load_cancelled.connect(lambda message: ended.append(True))
    window.session.pair_loaded.connect(lambda info: ended.append(False))
    window.session.load_pair(str(path), "")
    qtbot.waitUntil(lambda: held.is_set() or bool(ended), timeout=60_000)
    if held.is_set():
        window.load_status.cancel_button.click()
        assert window.load_status.label.text() == "Cancelling…" and not window.load_status.cancel_button.isEnabled()
    clicked.set()
    qtbot.waitUntil(lambda: bool(ended), timeout=60_000)
    engine.load_progress.disconnect(hold)
    return ended[0], stages


STAGES = ["Reading", "Importing", "Saving the weights", "Converting the tokenizer", "Loading"]


@pytest.mark.parametrize("stage", STAGES)
def test_cancel_wins_in_every_stage_of_an_import(make_window, qtbot, tmp_path: Path, monkeypatch, stage: str) -> None:
    """A Cancel clicked at 100% (the tokenizer converting, the model loading) was accepted and ignored: the
    imported model replaced the pair in use ~36 s later."""
    monkeypatch.setenv("SPECCHAT_CACHE", str(tmp_path / "cache"))
    path, _, _ = _write_synthetic(tmp_path, TYPES)
    window = make_window()
    cancelled, stages = cancel_in_stage(qtbot, window, path, stage)
    assert cancelled, f"the load ended with the new pair in use; stages reported: {stages}"
    message = window.statusBar().currentMessage()
    assert message.startswith(f"Cancelled while {stage.lower()}") and "still in use" in message
    assert window.load_status.isHidden() and window.error_banner.isHidden()
    assert window.session.pair.target_name == "tiny-target" and not window.session.loading
    imported = any((tmp_path / "cache" / "gguf").glob("*/config.json"))
    assert imported == (stage == "Loading")  # an import cut short keeps nothing; a finished one is the cache


def test_every_stage_shows_on_one_line_from_the_click_on(make_window, qtbot, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SPECCHAT_CACHE", str(tmp_path / "cache"))
    path, _, _ = _write_synthetic(tmp_path, TYPES)
    window = make_window()
    seen: list[tuple[str, str, int]] = []
    window.session.load_progress.connect(lambda stage, done, total: seen.append(
        (window.load_status.label.text(), window.statusBar().currentMessage(), window.load_status.bar.maximum())))
    with qtbot.waitSignal(window.session.pair_loaded, timeout=60_000):
        window.session.load_pair(str(path), "")
        assert not window.load_status.isHidden() and window.load_status.label.text().startswith("Loading")
        assert window.statusBar().currentMessage() == ""
    labels = [label for label, _, _ in seen]
    assert [s for s in STAGES if any(l.startswith(s) for l in labels)] == STAGES
    assert all(message == "" for _, message, _ in seen)  # the stage is the status bar's only line
    assert (labels[0], seen[0][2]) == (f"Reading {path.name}", 0)  # a stage that cannot say how far: a busy bar
    assert window.load_status.isHidden() and window.statusBar().currentMessage().startswith("Loaded")
    window.load_status.cancel()  # too late: refused, not accepted and ignored
    assert not window.session.cancelling_load


def test_cancel_is_the_size_of_its_word(make_window, qtbot) -> None:
    """In a 1600 px window the status bar's spare width went to Cancel: a 300 px button beside the 160 px bar."""
    from PySide6.QtWidgets import QApplication

    window = make_window()
    window.resize(1600, 1000)
    window.show()
    qtbot.waitExposed(window)
    status = window.load_status
    status.show_loading("Loading a-model.gguf…")
    qtbot.waitUntil(status.cancel_button.isVisible)
    QApplication.sendPostedEvents()  # the status bar lays its widgets out
    assert status.cancel_button.width() <= status.cancel_button.sizeHint().width()


def test_a_stage_that_says_how_far_it_is_says_the_time_left(make_window, monkeypatch) -> None:
    """Issue 32: every wait shows a time left when it can be known; an import's weights know their bytes."""
    from types import SimpleNamespace

    import app.load_status

    now = [100.0]
    monkeypatch.setattr(app.load_status, "time", SimpleNamespace(monotonic=lambda: now[0]))
    status = make_window().load_status
    status.show_progress("Importing a.gguf", 0, 1000)
    assert status.label.text() == "Importing a.gguf"  # no rate yet to go by
    now[0] += 0.5
    status.show_progress("Importing a.gguf", 12, 1000)
    assert status.label.text() == "Importing a.gguf"  # too soon: reports that arrive at once are no rate
    now[0] += 9.5
    status.show_progress("Importing a.gguf", 250, 1000)
    assert status.label.text() == "Importing a.gguf, about 30 s left"
    now[0] += 10
    status.show_progress("Importing a.gguf", 999, 1000)
    assert status.label.text() == "Importing a.gguf, about 1 s left"  # never "0 s"
    status.show_progress("Converting the tokenizer of a.gguf", 0, 0)
    assert status.label.text() == "Converting the tokenizer of a.gguf"  # cannot say how far: no time left
    now[0] += 10
    status.show_progress("Importing b.gguf", 500, 1000)
    assert status.label.text() == "Importing b.gguf"  # a stage's rate is its own, not the one before's


def test_a_long_stage_in_a_narrow_window_keeps_its_first_words_and_its_file_in_view(make_window, qtbot) -> None:
    """At 900 px the line read "Converting the tokenizer of SmolLM2-135M-In" under Xvfb, cut off mid-name by the
    bar (a longer name here: the test platform's font is smaller)."""
    from PySide6.QtWidgets import QApplication

    window = make_window()
    window.resize(900, 600)
    window.show()
    qtbot.waitExposed(window)
    stage = "Converting the tokenizer of Qwen2.5-Coder-1.5B-Instruct-abliterated-imatrix.Q4_K_M.gguf"
    window.load_status.show_progress("Reading Qwen2.5-Coder-1.5B-Instruct-abliterated-imatrix.Q4_K_M.gguf", 0, 0)
    window.load_status.show_progress(stage, 0, 0)
    QApplication.sendPostedEvents()  # the status bar lays its widgets out
    label = window.load_status.label
    shown = label.elided()
    assert label.fontMetrics().horizontalAdvance(shown) <= label.contentsRect().width()
    assert shown != stage and shown.startswith("Converting the") and shown.endswith(".gguf") and label.toolTip() == stage


def test_a_stage_that_cannot_say_how_far_it_is_says_how_long_it_has_run(make_window, monkeypatch) -> None:
    """Issue 32: Gemma 3's tokenizer converted for 20-70 s under a busy bar and the same words: stuck or working?"""
    from types import SimpleNamespace

    import app.load_status

    now = [100.0]
    monkeypatch.setattr(app.load_status, "time", SimpleNamespace(monotonic=lambda: now[0]))
    status = make_window().load_status
    stage = "Converting the tokenizer of a.gguf"
    status.show_progress(stage, 0, 0)
    assert status._ticker.isActive()
    now[0] += 1
    status._tick()
    assert status.label.text() == stage  # its first second: nothing to add
    now[0] += 24
    status._tick()
    assert status.label.text() == f"{stage}, 25 s so far"
    status.show_progress("Importing a.gguf", 10, 1000)  # a bar says how far: no clock beside it
    assert not status._ticker.isActive()
    status.show_progress(stage, 0, 0)
    status.show_cancelled("Cancelled while converting the tokenizer of a.gguf.")
    assert not status._ticker.isActive()


def test_a_model_of_several_gigabytes_shows_how_far_its_load_is(make_window, qtbot) -> None:
    """The stages count bytes: a 2.5 GB model's overflowed the signal's 32-bit ints, every report raised
    OverflowError, and the bar stood at 0% until the load ended."""
    window = make_window()
    window.session.engine.load_progress.emit("Loading qwen2.5-coder-1.5b", 2_600_000_000, 5_200_000_000)
    assert window.load_status.bar.value() == 500 and window.load_status.label.text().startswith("Loading qwen2.5-coder-1.5b")
