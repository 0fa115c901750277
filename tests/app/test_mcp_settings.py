"""The MCP section of Settings: the file chooser in the home folder, the servers a file names before OK, applied on OK."""

from __future__ import annotations

import json
from pathlib import Path

from app.mcp_servers import TOOLS_OFF, McpServers
from app.settings import AppSettings
from app.settings_dialog import SettingsDialog
from engine.params import GenerationParams


def _dialog(qtbot) -> SettingsDialog:
    dialog = SettingsDialog(GenerationParams.preset("default"), "", mcp=McpServers(AppSettings()))
    qtbot.addWidget(dialog)
    return dialog


def test_a_chosen_file_shows_its_servers_and_connects_on_ok(qtbot, isolated_home, monkeypatch):
    chosen = isolated_home / "claude.json"
    chosen.write_text(json.dumps({"mcpServers": {"notes": {"url": "http://127.0.0.1:9/mcp"}}}))
    asked: list[str] = []
    monkeypatch.setattr("app.file_dialogs.QFileDialog.getOpenFileName",
                        lambda _parent, _caption, folder, _filter: (asked.append(folder), (str(chosen), ""))[1])
    dialog = _dialog(qtbot)
    dialog.mcp.choose.click()
    assert asked == [str(Path.home())]
    assert dialog.mcp.servers_label.text() == "notes (http): connects when you press OK"
    configured: list[tuple[Path, bool]] = []
    monkeypatch.setattr(dialog.mcp.servers, "configure", lambda path, on: configured.append((path, on)))
    dialog.accept()
    assert configured == [(chosen, True)]


def test_tools_off_greys_the_file_out_and_says_so(qtbot, isolated_home):
    dialog = _dialog(qtbot)
    dialog.mcp.switch.setChecked(False)
    assert dialog.mcp.servers_label.text() == TOOLS_OFF and not dialog.mcp.path.isEnabled()
