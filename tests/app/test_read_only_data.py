"""A data folder that refuses writes, from launch or from mid-session: the saved chats are shown, the window says
that nothing can be saved and how to fix it, chatting goes on in memory, and nothing crashes (issue 22).

Read-only here means immutable (`chattr +i`), which stops root too: see tests/data_folders.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.settings import AppSettings
from engine.params import GenerationParams
from tests.app.conftest import FIXED_GREEDY, send_and_wait
from tests.data_folders import crashed_wal_database, read_only, saved_chats_at, snapshot, turned_read_only_mid_run


def remember_tiny_pair(tiny_dirs: tuple[Path, Path]) -> None:
    """Settings written before the folder turns read-only: the window loads the tiny pair at launch."""
    settings = AppSettings()
    settings.save_pair(str(tiny_dirs[0]), str(tiny_dirs[1]))
    settings.save_params(GenerationParams.preset("default").replace(**FIXED_GREEDY))
    settings.store.sync()


def sidebar_titles(window) -> list[str]:  # MainWindow
    return sorted(window.conversations.list.item(i).text() for i in range(window.conversations.list.count()))


@pytest.mark.parametrize("left_by", [saved_chats_at, crashed_wal_database], ids=["a quit", "a crash"])
def test_a_data_folder_read_only_at_launch_shows_its_chats_says_so_and_chats_in_memory(
    make_window, qtbot, isolated_home: Path, tiny_dirs, left_by
) -> None:
    """The sidebar was empty although the database held 5 chats, no notice stayed (loading the pair hid it), and
    new chats were silently not saved. After a crash of an earlier version, its `-shm` is immutable too."""
    folder = isolated_home / "app-data"
    remember_tiny_pair(tiny_dirs)
    left_by(folder / "conversations.sqlite3")
    with read_only(folder) as files:
        before = snapshot(files)
        window = make_window(pair=None, keep_settings=True)
        qtbot.waitUntil(lambda: window.session.pair is not None, timeout=30_000)
        assert sidebar_titles(window) == [f"Chat {i}" for i in range(5)]
        banner = window.error_banner.text()
        assert not window.error_banner.isHidden() and f"{folder} is read-only" in banner
        assert f"make {folder} writable" in banner and "kept in memory" in banner
        window.new_conversation()
        result = send_and_wait(qtbot, window, "Kept in memory")
        assert [m.text for m in window.chat.messages] == ["Kept in memory", result.text]
        assert sidebar_titles(window) == sorted(["Kept in memory", *(f"Chat {i}" for i in range(5))])
        assert not window.error_banner.isHidden() and window.error_banner.text() == banner  # still said after sending
        window.open_conversation(window.session.store.conversations("Chat 2")[0].id)
        assert [m.text for m in window.chat.messages] == ["question 3"]
        window.close()
        assert snapshot(files) == before and sorted(folder.iterdir()) == files


CHILD = """
import sys
from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication
from app.main_window import MainWindow

app = QApplication([])
window = MainWindow(open_picker_if_needed=False)
window.ask_before_quitting = False

def wait_for(signal, emit=lambda: None):
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(120_000, loop.quit)  # only if it never comes: the parent then sees no answer
    emit()
    loop.exec()

def send(text):
    window.input.setPlainText(text)
    wait_for(window.session.answer_finished, window.input.submitted.emit)

if window.session.pair is None:
    wait_for(window.session.pair_loaded)
send("Saved on disk")
print("ready", flush=True)
sys.stdin.readline()
window.new_conversation()
send("Sent after the folder turned read-only")
print(len(window.chat.messages), window.conversations.list.count())
print(window.error_banner.text())
window.close()
"""


def test_a_data_folder_that_turns_read_only_mid_session_never_crashes_the_app(isolated_home: Path, tiny_dirs) -> None:
    """New chat + Send killed the app with `Fatal Python error: Bus error`: SQLite wrote into its `-shm` file's
    memory mapping after the file was made immutable. The window runs in a child process, which a crash kills."""
    folder = isolated_home / "app-data"
    remember_tiny_pair(tiny_dirs)
    env = {**os.environ, "SPECCHAT_HOME": str(folder), "QT_QPA_PLATFORM": "offscreen"}
    done = turned_read_only_mid_run(CHILD, folder, env)
    assert done.returncode == 0, done.stderr[-3000:]
    counts, banner = done.stdout.splitlines()[-2:]
    assert counts == "2 2" and f"{folder} is read-only" in banner and "kept in memory" in banner
