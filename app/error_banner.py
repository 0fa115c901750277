"""The red banner above the input: what went wrong and what to do, in a sentence (never a traceback).

It stays until the next message is sent, or until it is clicked away: an error about a file not attached stood over
the box through everything done after it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QLabel, QWidget


class ErrorBanner(QLabel):
    """A wrapped, hidden-until-needed message in the error colours.

    Signals:
        dismissed(): the user clicked it away (the column decides what stays: a notice that nothing is saved does).
    """

    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("errorBanner")
        self.setWordWrap(True)
        self.setStyleSheet("background: #fde2e1; color: #7a0b06; padding: 8px; border-radius: 4px;")
        self.setToolTip("Click to hide")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setVisible(False)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        if event.button() == Qt.MouseButton.LeftButton:
            self.dismissed.emit()
        super().mouseReleaseEvent(event)
