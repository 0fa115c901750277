"""A page of wrapped lines or form rows that scrolls down when its room is shorter than it, never sideways.

A QScrollArea's own size hint is a few lines, whatever its page holds: a layout then gives it too little room even
where the window has plenty. This one asks for its page's whole height at its width.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


class PageScroll(QScrollArea):
    """Scrolls `page` down; its lines wrap to the width it is given."""

    def __init__(self, page: QWidget) -> None:
        super().__init__()
        self.setWidget(page)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """The page's whole height at the width it has (at least its narrowest, before the first layout)."""
        page = self.widget()
        if page is None:
            return super().sizeHint()
        width = max(self.viewport().width(), page.minimumSizeHint().width())
        height = page.heightForWidth(width) if page.hasHeightForWidth() else page.sizeHint().height()
        return QSize(max(super().sizeHint().width(), self.minimumWidth()), height)
