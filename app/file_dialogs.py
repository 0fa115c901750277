"""Where the app's file dialogs open: the folder last used in one of them, or the user's home.

They opened in the app's working directory (wherever it was launched from: the app bundle's insides, a source
checkout), which is never where models or exports live. The last folder is remembered across launches.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from .settings import AppSettings

KEY = "dialogs/last_folder"


def start_folder() -> Path:
    """The folder last used in a file dialog, if it still exists; else the user's home."""
    last = Path(str(AppSettings().store.value(KEY, "") or ""))
    return last if str(last) not in ("", ".") and last.is_dir() else Path.home()


def remember(path: str) -> str:
    """Keep the folder of a chosen file (or a chosen folder itself) for the next dialog; returns `path`."""
    if path:
        chosen = Path(path)
        AppSettings().store.setValue(KEY, str(chosen if chosen.is_dir() else chosen.parent))
    return path


def open_file(parent: QWidget, caption: str, filter: str) -> str:
    return remember(QFileDialog.getOpenFileName(parent, caption, str(start_folder()), filter)[0])


def open_files(parent: QWidget, caption: str, filter: str) -> list[str]:
    paths = QFileDialog.getOpenFileNames(parent, caption, str(start_folder()), filter)[0]
    if paths:
        remember(paths[0])
    return paths


def save_file(parent: QWidget, caption: str, name: str, filter: str) -> str:
    return remember(QFileDialog.getSaveFileName(parent, caption, str(start_folder() / name), filter)[0])


def open_folder(parent: QWidget, caption: str) -> str:
    return remember(QFileDialog.getExistingDirectory(parent, caption, str(start_folder())))
