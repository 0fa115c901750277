"""The red banner above the input: what went wrong and what to do, in a sentence (never a traceback)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget


class ErrorBanner(QLabel):
    """A wrapped, hidden-until-needed message in the error colours."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("errorBanner")
        self.setWordWrap(True)
        self.setStyleSheet("background: #fde2e1; color: #7a0b06; padding: 8px; border-radius: 4px;")
        self.setVisible(False)
