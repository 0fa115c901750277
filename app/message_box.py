"""A box a message is typed in: Enter sends, Shift+Enter starts a new line, Tab moves on to the next control.

The chat's message box and a question's Edit box are both one: Enter sent from the first and added a line in the
second, and Tab typed a tab character into either, so a keyboard user could not leave the box.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget


class MessageBox(QPlainTextEdit):
    """Plain text that is sent with Enter.

    Signals:
        submitted(): Enter was pressed (without Shift).
    """

    submitted = Signal()

    def __init__(self, placeholder: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText(placeholder)
        self.setTabChangesFocus(True)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)
