"""Quiet text: an answer's figures, a note under a setting, a dialog's fine print. Dimmer than the text around it,
and still readable.

Such text was drawn in `palette(mid)`, a colour meant for bevels and borders: in Fusion's light mode it is #b8b8b8 on
a #efefef window, a contrast of 1.7:1, and a new user could not read an answer's speed under it. Quiet text is the
text colour moved part of the way toward the window's, so it keeps about 4.5:1 (WCAG's figure for body text) in
light and dark mode alike, and follows the system when it switches.
"""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

QUIET_SHARE = 0.45  # how far from the text colour toward the window's quiet text lies
Quieted = TypeVar("Quieted", bound=QWidget)


def quiet_colour(palette: QPalette) -> QColor:
    """The text colour of `palette` moved QUIET_SHARE of the way toward its window colour."""
    text, window = palette.color(QPalette.ColorRole.WindowText), palette.color(QPalette.ColorRole.Window)
    pairs = ((text.redF(), window.redF()), (text.greenF(), window.greenF()), (text.blueF(), window.blueF()))
    return QColor.fromRgbF(*(a + QUIET_SHARE * (b - a) for a, b in pairs))


class _Quiet(QObject):
    """Keeps a widget's quiet colour in step with its parent's palette. The widget's own palette cannot tell: the
    style sheet that colours it fixes its palette, so a window's change (the system into dark mode) stops at it; so
    this watches the parent, and moves with the widget to a new one."""

    def __init__(self, widget: QWidget, style: str) -> None:
        super().__init__(widget)
        self.widget, self.style = widget, style
        self.parent_watched: QWidget | None = None
        widget.installEventFilter(self)
        self.follow_parent()

    def follow_parent(self) -> None:
        """Watch the widget's parent (now), and colour the widget from its palette."""
        parent = self.widget.parentWidget()
        if parent is not self.parent_watched:
            if self.parent_watched is not None:
                self.parent_watched.removeEventFilter(self)
            if parent is not None:
                parent.installEventFilter(self)
            self.parent_watched = parent
        self.apply()

    def apply(self) -> None:
        palette = self.parent_watched.palette() if self.parent_watched is not None else QApplication.palette()
        sheet = f"color: {quiet_colour(palette).name()}; {self.style}".strip()
        if self.widget.styleSheet() != sheet:
            self.widget.setStyleSheet(sheet)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if watched is self.widget and event.type() == QEvent.Type.ParentChange:
            self.follow_parent()
        elif watched is self.parent_watched and event.type() == QEvent.Type.PaletteChange:
            self.apply()
        return False


def make_quiet(widget: Quieted, style: str = "") -> Quieted:
    """Draw `widget`'s text as quiet text, with the rest of its style sheet `style` ("font-size: 11px;")."""
    _Quiet(widget, style)
    return widget
