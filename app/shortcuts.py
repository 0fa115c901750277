"""The window's keyboard shortcuts, in one table: what a person presses and what it does.

Qt maps Ctrl to Cmd on macOS, so these are Cmd+N, Cmd+K, Cmd+, and Cmd+Q there (and Cmd with +, - and 0). Quit is spelled out because
`QKeySequence.Quit` is empty off macOS and the KDE/GNOME themes.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget

from .text_size import TextSize


def install_shortcuts(window: QWidget, *, stop: Callable[[], object], new_chat: Callable[[], object],
                      models: Callable[[], object], settings: Callable[[], object], quit: Callable[[], object]) -> None:
    """Esc stops the answer, Ctrl+N starts a chat, Ctrl+K opens Models…, Ctrl+, opens Settings, Ctrl+Q quits (closing
    the window, which asks first while an answer is generated)."""
    for keys, slot in (("Esc", stop), ("Ctrl+N", new_chat), ("Ctrl+K", models), ("Ctrl+,", settings), ("Ctrl+Q", quit)):
        QShortcut(QKeySequence(keys), window, slot)


def install_text_size_shortcuts(widget: QWidget, text_size: TextSize) -> None:
    """Ctrl with + (or =, the same key unshifted) makes the chat's text larger, Ctrl+- smaller, Ctrl+0 as it was;
    in the window `widget` is in."""
    for keys, slot in (("Ctrl++", text_size.larger), ("Ctrl+=", text_size.larger), ("Ctrl+-", text_size.smaller),
                       ("Ctrl+0", text_size.reset)):
        QShortcut(QKeySequence(keys), widget, slot)
