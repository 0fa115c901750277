"""The window's keyboard shortcuts, in one table: what a person presses and what it does.

Qt maps Ctrl to Cmd on macOS, so these are Cmd+N, Cmd+K, Cmd+, and Cmd+Q there. Quit is spelled out because
`QKeySequence.Quit` is empty off macOS and the KDE/GNOME themes.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget


def install_shortcuts(window: QWidget, *, stop: Callable[[], object], new_chat: Callable[[], object],
                      models: Callable[[], object], settings: Callable[[], object], quit: Callable[[], object]) -> None:
    """Esc stops the answer, Ctrl+N starts a chat, Ctrl+K opens Models…, Ctrl+, opens Settings, Ctrl+Q quits (closing
    the window, which asks first while an answer is generated)."""
    for keys, slot in (("Esc", stop), ("Ctrl+N", new_chat), ("Ctrl+K", models), ("Ctrl+,", settings), ("Ctrl+Q", quit)):
        QShortcut(QKeySequence(keys), window, slot)
