"""A layout that lays its widgets out in a row, right-aligned, and wraps them onto more rows when narrow.

A message's actions (Copy, Trace…, Edit, Regenerate, Delete) in one fixed row made the chat column too wide
for a 900-pixel window, which then scrolled sideways. In rows that wrap, the narrowest the actions can go is
their widest button, and the column always fits its window.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QSizePolicy, QWidget


class FlowLayout(QLayout):
    """Right-aligned rows of widgets that wrap when the width runs out (Qt's flow layout example, aligned right).

    Args:
        spacing: pixels between widgets, across and between rows.
    """

    def __init__(self, parent: QWidget | None = None, spacing: int = 2) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 - Qt API
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt API
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt API
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 - Qt API
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt API
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt API
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 - Qt API
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """Everything on one row."""
        shown = self._shown()
        width = sum(item.sizeHint().width() for item in shown) + self._spacing * max(len(shown) - 1, 0)
        height = max((item.sizeHint().height() for item in shown), default=0)
        return QSize(width, height)

    def minimumSize(self) -> QSize:  # noqa: N802 - Qt API
        """One widget a row: as narrow as the widest widget."""
        size = QSize()
        for item in self._shown():
            size = size.expandedTo(item.minimumSize())
        return size

    def _shown(self) -> list[QLayoutItem]:
        return [item for item in self._items if not item.isEmpty()]

    def _rows(self, width: int) -> list[list[QLayoutItem]]:
        rows: list[list[QLayoutItem]] = [[]]
        used = 0
        for item in self._shown():
            needed = item.sizeHint().width() + (self._spacing if rows[-1] else 0)
            if rows[-1] and used + needed > width:
                rows.append([])
                used, needed = 0, item.sizeHint().width()
            rows[-1].append(item)
            used += needed
        return [row for row in rows if row]

    def _arrange(self, rect: QRect, move: bool) -> int:
        """Place the rows, each flush right, from the top of `rect`; returns the height they take."""
        y = rect.y()
        for row in self._rows(rect.width()):
            row_height = max(item.sizeHint().height() for item in row)
            x = rect.right() + 1
            for item in reversed(row):
                x -= item.sizeHint().width()
                if move:
                    item.setGeometry(QRect(QPoint(x, y), item.sizeHint()))
                x -= self._spacing
            y += row_height + self._spacing
        return max(y - self._spacing - rect.y(), 0)


def flow_row(widgets: list[QWidget]) -> QWidget:
    """The widgets in a FlowLayout of their own, taking what width there is (and wrapping in less)."""
    row = QWidget()
    layout = FlowLayout(row)
    for widget in widgets:
        layout.addWidget(widget)
    policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
    policy.setHeightForWidth(True)
    row.setSizePolicy(policy)
    return row
