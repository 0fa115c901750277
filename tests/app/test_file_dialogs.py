"""Where file dialogs open: the folder last used for the same purpose, or the user's home, never the app's working
directory (a launch from a source checkout or the app bundle's insides)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import file_dialogs


@pytest.fixture
def asked(monkeypatch, tmp_path: Path, isolated_home: Path) -> list[str]:
    """The folder each open dialog was started in; the first chooses two files in tmp_path, the others nothing."""
    folders: list[str] = []

    def files(_parent, _caption, folder, _filter):  # QFileDialog.getOpenFileNames
        folders.append(folder)
        return ([str(tmp_path / "a.py"), str(tmp_path / "b.py")] if len(folders) == 1 else []), ""

    def file(_parent, _caption, folder, _filter):  # QFileDialog.getOpenFileName
        folders.append(folder)
        return "", ""

    monkeypatch.setattr(file_dialogs.QFileDialog, "getOpenFileNames", files)
    monkeypatch.setattr(file_dialogs.QFileDialog, "getOpenFileName", file)
    return folders


def test_files_attached_start_in_the_home_folder_then_in_the_last_one_used(make_window, asked: list[str],
                                                                           tmp_path: Path) -> None:
    window = make_window()
    window.attachments.paperclip.click()
    window.attachments.paperclip.click()
    assert asked == [str(Path.home()), str(tmp_path)]


def test_each_purpose_starts_in_its_own_last_folder(qtbot, asked: list[str], tmp_path: Path) -> None:
    """With one folder for every dialog, a new user's trace export and MCP file opened in the model folder just
    picked; files attached from one folder do not move where the MCP servers' file is looked for."""
    from app.mcp_servers import McpServers
    from app.settings import AppSettings
    from app.settings_dialog import SettingsDialog
    from engine.params import GenerationParams

    assert file_dialogs.open_files(None, "attachments", "Attach files", "*") == [str(tmp_path / "a.py"), str(tmp_path / "b.py")]
    dialog = SettingsDialog(GenerationParams(), "", mcp=McpServers(AppSettings()))
    qtbot.addWidget(dialog)
    dialog.mcp.choose.click()
    assert asked[-1] == str(Path.home())
    file_dialogs.remember("settings files", str(tmp_path / "mcp.json"))
    dialog.mcp.choose.click()
    assert asked[-1] == str(tmp_path) and file_dialogs.start_folder("exports") == Path.home()
