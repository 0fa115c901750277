"""A one-line label that fits any width: it shows as much of its text as fits, ending in "…", and the whole text
on hover. For a line that must stay in view when the window is narrow (the toolbar's pair line, which a toolbar
would otherwise hide behind its "»" overflow button)."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QWidget

MINIMUM_CHARACTERS = 16  # at its narrowest it still says which model this is


class ElidedLabel(QLabel):
    """A QLabel whose text is cut with "…" when narrower than it (at its end, or with `elide` in its middle, to
    keep both ends in view); its tooltip is then the whole text."""

    def __init__(self, text: str = "", parent: QWidget | None = None,
                 elide: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> None:
        super().__init__(parent)
        self._elide = elide
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt API
        super().setText(text)
        self.setToolTip(text)
        self.updateGeometry()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(self.fontMetrics().averageCharWidth() * MINIMUM_CHARACTERS, super().minimumSizeHint().height())

    def elided(self) -> str:
        """The text as shown at the label's width."""
        return self.fontMetrics().elidedText(self.text(), self._elide, self.contentsRect().width())

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 - Qt API
        painter = QPainter(self)
        painter.setPen(self.palette().windowText().color())
        painter.drawText(self.contentsRect(), int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), self.elided())
