"""Where the app's file dialogs open: the folder last used for the same purpose, or the user's home.

They opened in the app's working directory (wherever it was launched from: the app bundle's insides, a source
checkout), which is never where models or exports live. The last folder is remembered across launches, one per
purpose (`Purpose`): with one for all, a trace export opened in the model's weights folder just picked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from PySide6.QtWidgets import QFileDialog, QWidget

from .settings import AppSettings

Purpose = Literal["models", "attachments", "exports", "settings files"]


def _key(purpose: Purpose) -> str:
    return f"dialogs/last_folder/{purpose}"


def start_folder(purpose: Purpose) -> Path:
    """The folder last used for `purpose`, if it still exists; else the user's home."""
    last = Path(str(AppSettings().store.value(_key(purpose), "") or ""))
    return last if str(last) not in ("", ".") and last.is_dir() else Path.home()


def remember(purpose: Purpose, path: str) -> str:
    """Keep the folder of a chosen file (or a chosen folder itself) for the next dialog of `purpose`; returns `path`."""
    if path:
        chosen = Path(path)
        AppSettings().store.setValue(_key(purpose), str(chosen if chosen.is_dir() else chosen.parent))
    return path


def open_file(parent: QWidget, purpose: Purpose, caption: str, filter: str) -> str:
    return remember(purpose, QFileDialog.getOpenFileName(parent, caption, str(start_folder(purpose)), filter)[0])


def open_files(parent: QWidget, purpose: Purpose, caption: str, filter: str) -> list[str]:
    paths = QFileDialog.getOpenFileNames(parent, caption, str(start_folder(purpose)), filter)[0]
    if paths:
        remember(purpose, paths[0])
    return paths


def save_file(parent: QWidget, purpose: Purpose, caption: str, name: str, filter: str) -> str:
    return remember(purpose, QFileDialog.getSaveFileName(parent, caption, str(start_folder(purpose) / name), filter)[0])


def open_folder(parent: QWidget, purpose: Purpose, caption: str) -> str:
    return remember(purpose, QFileDialog.getExistingDirectory(parent, caption, str(start_folder(purpose))))
