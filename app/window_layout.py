"""The window's size and place and its three columns' widths, kept from one launch to the next.

A person who narrows the side panel, or drags it shut on a small screen, finds it so the next time; a first launch
opens at the size the window is made for, cut to the screen it opens on (`screen_fit`), instead of running off a
small screen's edges as a fixed 1280x800 did.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSize
from PySide6.QtWidgets import QMainWindow, QSplitter

from .screen_fit import fitted, screen_room
from .settings import AppSettings

PREFERRED = QSize(1280, 800)  # the window's size on a first launch where the screen has room
COLUMNS = [200, 760, 300]  # the chat list, the chat and the side panel on a first launch (the chat takes what is left)


def restore_window_layout(window: QMainWindow, columns: QSplitter, settings: AppSettings) -> None:
    """Size and place `window` and its `columns` as they were when it last closed, or as on a first launch."""
    geometry, widths = settings.window_layout()
    if geometry is None or not window.restoreGeometry(geometry):
        window.resize(fitted(PREFERRED, screen_room(window)))
    if widths is None or not columns.restoreState(widths):
        columns.setSizes(COLUMNS)


def save_window_layout(window: QMainWindow, columns: QSplitter, settings: AppSettings) -> None:
    """Remember `window`'s size and place and its columns' widths (a collapsed side panel stays collapsed)."""
    settings.save_window_layout(QByteArray(window.saveGeometry()), QByteArray(columns.saveState()))
