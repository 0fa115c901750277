"""The header button that folds a widget under it (a thinking model's reasoning, a tool call's result)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton, QWidget


class FoldButton(QToolButton):
    """Checked: the body is shown under a down arrow; unchecked: hidden, the arrow points right."""

    def __init__(self, body: QWidget, tooltip: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setCheckable(True)
        self.setAutoRaise(True)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.setToolTip(tooltip)
        self._body = body
        self.toggled.connect(self._show)
        self._show(False)

    def _show(self, on: bool) -> None:
        self.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self._body.setVisible(on)
