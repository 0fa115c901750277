"""The settings dialog edits GenerationParams within the engine's own ranges."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QFormLayout

from app.mcp_servers import McpServers
from app.settings import AppSettings
from app.settings_dialog import SSD_MEANING, SettingsDialog, ssd_reason
from engine.params import RANGES, GenerationParams


def test_spin_boxes_take_their_limits_from_the_engine(qtbot) -> None:
    dialog = SettingsDialog(GenerationParams(), "")
    qtbot.addWidget(dialog)
    for name in ("num_draft", "max_draft", "top_k", "max_tokens"):
        box = getattr(dialog, name)
        low, high = RANGES[name]
        assert box.minimum() == low
        if high is not None:
            assert box.maximum() == high
    dialog.num_draft.setValue(40)
    assert dialog.params().num_draft == 40  # above the old dialog's 16, within the engine's 64


def test_the_dialog_returns_what_it_was_given_when_nothing_changes(qtbot) -> None:
    params = GenerationParams(drafter="model+lookup", num_draft=7, top_k=40, temperature=0.3)
    dialog = SettingsDialog(params, "Be brief.")
    qtbot.addWidget(dialog)
    assert dialog.params() == params and dialog.system_prompt.toPlainText() == "Be brief."


def test_kv_cache_bits_and_repetition_penalty_are_edited_and_remembered(qtbot, isolated_home) -> None:
    dialog = SettingsDialog(GenerationParams(), "")
    qtbot.addWidget(dialog)
    assert dialog.params().kv_bits is None
    dialog.kv_bits.setCurrentIndex(1)
    dialog.repetition_penalty.setValue(1.3)
    params = dialog.params()
    assert params.kv_bits == 8 and params.repetition_penalty == 1.3
    AppSettings().save_params(params)
    assert AppSettings().params().kv_bits == 8 and AppSettings().params().repetition_penalty == 1.3
    AppSettings().save_params(params.replace(kv_bits=None))
    assert AppSettings().params().kv_bits is None


def test_lenience_is_edited_and_remembered(qtbot, isolated_home) -> None:
    dialog = SettingsDialog(GenerationParams(), "")
    qtbot.addWidget(dialog)
    assert dialog.params().lenience == 0.0 and "LOSSY" in dialog.lenience.toolTip()
    dialog.lenience.setValue(0.35)
    AppSettings().save_params(dialog.params())
    assert AppSettings().params().lenience == 0.35


def test_ssd_and_its_fanout_are_edited_and_remembered(qtbot, isolated_home) -> None:
    dialog = SettingsDialog(GenerationParams(), "")
    qtbot.addWidget(dialog)
    assert not dialog.params().ssd and not dialog.fanout.isEnabled()
    dialog.ssd.setChecked(True)
    assert dialog.fanout.isEnabled()
    dialog.fanout.setValue(5)
    AppSettings().save_params(dialog.params())
    assert (AppSettings().params().ssd, AppSettings().params().fanout) == (True, 5)


def test_drafting_from_saved_chats_is_switched_with_lookup_and_remembered(qtbot, isolated_home) -> None:
    dialog = SettingsDialog(GenerationParams(drafter="model"), "")
    qtbot.addWidget(dialog)
    assert dialog.history.isChecked() and not dialog.history.isEnabled()  # a draft model alone never looks up
    dialog = SettingsDialog(GenerationParams(drafter="model+lookup"), "")
    qtbot.addWidget(dialog)
    assert dialog.history.isEnabled()
    dialog.history.setChecked(False)
    AppSettings().save_params(dialog.params())
    assert AppSettings().params().history is False


def test_the_think_default_is_shown_for_a_model_that_can_switch_and_remembered(qtbot, isolated_home) -> None:
    plain = SettingsDialog(GenerationParams(), "")
    qtbot.addWidget(plain)
    assert plain.think.isHidden()
    dialog = SettingsDialog(GenerationParams(), "", can_switch_thinking=True)
    qtbot.addWidget(dialog)
    assert not dialog.think.isHidden() and dialog.think.isChecked()
    dialog.think.setChecked(False)
    AppSettings().save_params(dialog.params())
    assert AppSettings().params().think is False


def test_running_across_macs_takes_a_hostfile_and_refuses_one_that_cannot_drive_a_ring(qtbot, tmp_path) -> None:
    dialog = SettingsDialog(GenerationParams(), "")
    qtbot.addWidget(dialog)
    field = dialog.across_macs
    assert not field.switch.isChecked() and field.hosts() == "" and not field.path.isEnabled()
    field.switch.setChecked(True)
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Rejected and field.error.text().startswith("Choose the hostfile")
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"hosts": [{"ssh": "mac-a", "ips": ["10.0.0.1"]}]}))
    field.path.setText(str(one))
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Rejected
    assert field.error.text() == f"The hostfile {one} lists 1 host: a pipeline needs two Macs or more."
    two = tmp_path / "two.json"
    two.write_text(json.dumps({"hosts": [{"ssh": "mac-a", "ips": ["10.0.0.1"]}, {"ssh": "mac-b", "ips": ["10.0.0.2"]}]}))
    field.path.setText(str(two))
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted and field.hosts() == str(two)
    field.switch.setChecked(False)
    assert field.hosts() == ""  # off: this Mac alone, whatever the path says


def test_the_choose_the_hostfile_line_goes_once_a_hostfile_is_chosen(qtbot, tmp_path, monkeypatch) -> None:
    """The red "Choose the hostfile…" line stayed under the field after one was chosen."""
    two = tmp_path / "two.json"
    two.write_text(json.dumps({"hosts": [{"ssh": "mac-a", "ips": ["10.0.0.1"]}, {"ssh": "mac-b", "ips": ["10.0.0.2"]}]}))
    monkeypatch.setattr("app.settings_dialog.open_file", lambda *args: str(two))
    dialog = SettingsDialog(GenerationParams(), "")
    qtbot.addWidget(dialog)
    field = dialog.across_macs
    field.switch.setChecked(True)
    dialog.accept()
    assert field.error.text().startswith("Choose the hostfile")
    field.choose.click()
    assert field.error.text() == "" and field.hosts() == str(two)


def test_a_hostfile_switched_off_after_a_failure_is_offered_again(qtbot) -> None:
    dialog = SettingsDialog(GenerationParams(), "", hosts="", hostfile="/Users/me/hosts.json")
    qtbot.addWidget(dialog)
    field = dialog.across_macs
    assert not field.switch.isChecked() and field.hosts() == "" and field.path.text() == "/Users/me/hosts.json"
    field.switch.setChecked(True)
    assert field.hosts() == "/Users/me/hosts.json"


def test_the_dialog_shows_the_hostfile_in_use(qtbot) -> None:
    dialog = SettingsDialog(GenerationParams(), "", hosts="/Users/me/hosts.json")
    qtbot.addWidget(dialog)
    assert dialog.across_macs.switch.isChecked() and dialog.across_macs.hosts() == "/Users/me/hosts.json"


@pytest.mark.parametrize("drafter", ["auto", "model", "lookup", "model+lookup", "mtp", "dflash"])
def test_the_dialog_chooses_no_drafter_and_passes_the_toolbars_choice_through(qtbot, drafter: str) -> None:
    """The drafter is chosen in one place, the toolbar (issue 32): Settings had "Drafts come from" too."""
    dialog = SettingsDialog(GenerationParams(drafter=drafter), "")
    qtbot.addWidget(dialog)
    rows = [dialog.form.itemAt(i, QFormLayout.ItemRole.LabelRole) for i in range(dialog.form.rowCount())]
    assert "Drafts come from" not in [row.widget().text() for row in rows if row is not None and row.widget()]
    assert not any(box.findData(drafter) >= 0 for box in dialog.findChildren(QComboBox))
    assert dialog.params().drafter == drafter


@pytest.mark.parametrize("drafter, applies", [("model", True), ("model+lookup", True), ("auto", False), ("lookup", False),
                                              ("mtp", False), ("dflash", False)])
def test_ssd_applies_only_while_a_draft_model_chosen_as_the_drafter_drafts(qtbot, drafter: str, applies: bool) -> None:
    """SSD drafts ahead with a draft model: the switch follows the toolbar's drafter, and says why when it does not
    apply (a DFlash pair's switch stayed enabled, issue 32; Automatic asks each round's drafter after the verdict)."""
    dialog = SettingsDialog(GenerationParams(drafter=drafter, ssd=True), "")
    qtbot.addWidget(dialog)
    assert dialog.ssd.isEnabled() == applies and dialog.fanout.isEnabled() == applies
    assert dialog.ssd_note.isVisibleTo(dialog) != applies and dialog.ssd_note.text() == ssd_reason(drafter)
    assert dialog.ssd.toolTip() == (SSD_MEANING if applies else ssd_reason(drafter))


def test_ok_and_cancel_stay_on_a_short_screen_and_the_settings_scroll(qtbot, isolated_home) -> None:
    """Issue 32: with its MCP section the dialog was about 740 px tall, and on a 900x600 screen OK and Cancel were below
    the screen's bottom edge."""
    dialog = SettingsDialog(GenerationParams(), "", mcp=McpServers(AppSettings()))
    qtbot.addWidget(dialog)
    dialog.fit_to(600)
    dialog.show()
    assert dialog.height() < 600 < dialog.form.sizeHint().height() + dialog.buttons.height()
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert dialog.rect().contains(QRect(ok.mapTo(dialog, QPoint(0, 0)), ok.size()))
    scroll = dialog.page_scroll.verticalScrollBar()
    assert scroll.maximum() > 0 and not dialog.page_scroll.horizontalScrollBar().maximum()  # down, never sideways


def test_on_a_tall_screen_the_settings_show_whole(qtbot, isolated_home) -> None:
    dialog = SettingsDialog(GenerationParams(), "", mcp=McpServers(AppSettings()))
    qtbot.addWidget(dialog)
    dialog.fit_to(2000)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.page_scroll.widget().height() == dialog.page_scroll.viewport().height())
    assert dialog.page_scroll.verticalScrollBar().maximum() == 0


def test_a_hostfile_error_scrolls_into_view_on_ok(qtbot, isolated_home) -> None:
    """The across-Macs field sits low in the scrolled settings: its error must not be said out of sight."""
    dialog = SettingsDialog(GenerationParams(), "", mcp=McpServers(AppSettings()))
    qtbot.addWidget(dialog)
    dialog.fit_to(600)
    dialog.show()
    dialog.across_macs.switch.setChecked(True)
    dialog.accept()
    error = dialog.across_macs.error
    assert error.text().startswith("Choose the hostfile")
    qtbot.waitUntil(lambda: dialog.page_scroll.viewport().rect().contains(error.mapTo(dialog.page_scroll.viewport(), QPoint(0, 0))))


def test_the_reason_ssd_does_not_apply_names_the_drafter_as_the_toolbar_does() -> None:
    assert ssd_reason("dflash").endswith("the Drafter chosen is the DFlash drafter.")
    assert "lookup drafts nothing ahead" in ssd_reason("lookup") and "Automatic" in ssd_reason("auto")
