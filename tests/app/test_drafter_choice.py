"""The drafter is chosen in one place, the toolbar's "Drafter:" (issue 32: the picker, Settings and Compare each
chose it, under different names): Automatic first, then the drafters the loaded pair can run by their registry
labels; remembered per pair, used by the next answer, and set aside with a line when the pair cannot run it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox

from app.settings import AppSettings
from engine.drafter_kinds import KINDS, drafter_label, heading
from engine.events import RoundEvent
from tests.app.conftest import choose_drafter, send_and_wait


def offered(window) -> list[str]:
    combo = window.toolbar.drafter.combo
    return [combo.itemData(i) for i in range(combo.count())]


def test_the_drafter_is_chosen_in_one_control_in_the_toolbar_and_settings_has_none(make_window, monkeypatch) -> None:
    window = make_window()
    window.show()
    choices = [box for box in window.findChildren(QComboBox) if box.findData("auto") >= 0]
    assert choices == [window.toolbar.drafter.combo] and choices[0].isVisible()
    assert window.toolbar.isAncestorOf(choices[0]) and window.toolbar.drafter.combo.objectName() == "drafterChoice"
    dialogs = []
    monkeypatch.setattr("app.main_window.SettingsDialog.exec", lambda self: dialogs.append(self) or 0)
    window.open_settings()
    assert not [box for box in dialogs[0].findChildren(QComboBox) if any(box.findData(name) >= 0 for name in KINDS)]


@pytest.mark.parametrize("pair, drafters", [
    ("draft model", ["auto", "model", "lookup", "model+lookup"]),
    ("target alone", ["auto", "lookup"]),
    ("MTP target", ["auto", "lookup", "mtp"]),
])
def test_it_lists_automatic_then_only_the_drafters_the_pair_can_run(make_window, tiny_dirs, mtp_target, pair: str,
                                                                    drafters: list[str]) -> None:
    loaded = {"draft model": (str(tiny_dirs[0]), str(tiny_dirs[1])), "target alone": (str(tiny_dirs[0]), ""),
              "MTP target": (str(mtp_target.folder("hybrid")), "")}[pair]
    window = make_window(pair=loaded, drafter="auto")
    assert offered(window) == drafters
    combo = window.toolbar.drafter.combo
    for i, name in enumerate(drafters):  # the names the stats line, the pair line and Compare give them
        assert combo.itemText(i) == heading(drafter_label(name)) and combo.itemData(i, Qt.ItemDataRole.ToolTipRole) == KINDS[name].about
    assert combo.currentData() == "auto" and combo.currentText() == "Automatic" and combo.toolTip().startswith(KINDS["auto"].about)


def test_a_choice_drafts_the_next_answer_without_a_reload_and_is_remembered_for_its_pair(make_window, qtbot, tiny_dirs) -> None:
    window = make_window(drafter="auto")
    session = window.session
    loads, requests, rounds = [], [], []
    session.pair_loading.connect(loads.append)
    session._requests.generate.connect(requests.append)
    session.answer_events.connect(lambda answer, events: rounds.extend(e.drafter for e in events if isinstance(e, RoundEvent)))
    choose_drafter(window, "lookup")
    assert window.toolbar.pair_label.text().endswith("· speculative, lookup")
    send_and_wait(qtbot, window, "one two three one two three one two")
    assert loads == [] and requests[-1].params.drafter == "lookup" and set(rounds) <= {"lookup", "none"}
    with qtbot.waitSignal(session.pair_loaded, timeout=30_000):
        session.load_pair(str(tiny_dirs[0]), "")
    assert session.params.drafter == "auto" and window.toolbar.drafter.combo.currentText() == "Automatic"  # never pinned
    with qtbot.waitSignal(session.pair_loaded, timeout=30_000):
        session.load_pair(str(tiny_dirs[0]), str(tiny_dirs[1]))
    assert session.params.drafter == "lookup" and window.toolbar.drafter.combo.currentData() == "lookup"
    relaunched = make_window(pair=None, keep_settings=True)  # the pair saved last loads, with its drafter
    assert relaunched.session.pair.draft == str(tiny_dirs[1]) and relaunched.session.params.drafter == "lookup"
    assert relaunched.toolbar.drafter.combo.currentText() == "Lookup"


def test_a_pin_the_pair_cannot_run_falls_back_to_automatic_with_one_line(make_window, tiny_dirs) -> None:
    window = make_window(drafter="mtp")  # pinned for the tiny pair, whose target has no MTP heads
    assert window.session.params.drafter == "auto" and window.toolbar.drafter.combo.currentText() == "Automatic"
    line = "This pair cannot run the built-in MTP drafter chosen for it before: drafting with Automatic."
    assert line in window.statusBar().currentMessage()
    assert AppSettings().pinned_drafter(str(tiny_dirs[0]), str(tiny_dirs[1])) == "auto"  # said once, not every launch


def test_a_target_whose_conversion_dropped_its_mtp_heads_loads_and_is_offered_no_mtp_drafter(make_window, mtp_target,
                                                                                              tmp_path) -> None:
    """Its config still declares the heads (mlx-lm's conversion drops the mtp.* tensors): offering the built-in MTP
    drafter would only lead to an error in the first answer that chose it."""
    import shutil

    dropped = shutil.copytree(mtp_target.folder("hybrid-sidecar"), tmp_path / "dropped-heads")
    (dropped / "mtp.safetensors").unlink()
    window = make_window(pair=(str(dropped), ""), drafter="auto")
    assert window.session.pair is not None and window.error_banner.isHidden()
    assert offered(window) == ["auto", "lookup"]


def test_standard_decoding_greys_the_choice_and_says_why(make_window, qtbot) -> None:
    """With Speculative off the target decodes alone: a drafter picked then would do nothing, yet the choice looked
    live. It is greyed while Speculative is off, says why on hover, and keeps the pin for when it is on again."""
    window = make_window(drafter="lookup")
    choice = window.toolbar.drafter
    assert choice.isEnabled()
    window.toolbar.speculative_action.setChecked(False)
    assert not choice.isEnabled() and "Speculative is off" in choice.combo.toolTip()
    assert window.session.params.drafter == "lookup"
    window.toolbar.speculative_action.setChecked(True)
    assert choice.isEnabled() and choice.combo.currentData() == "lookup" and "Speculative is off" not in choice.combo.toolTip()


def test_a_window_launched_in_standard_mode_starts_with_the_choice_greyed(make_window) -> None:
    window = make_window(mode="standard")
    assert window.session.pair is not None and not window.toolbar.drafter.isEnabled()
