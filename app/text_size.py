"""The chat's text size: larger with Cmd/Ctrl and +, smaller with Cmd/Ctrl and -, as it was with Cmd/Ctrl+0, and
the same at the next launch.

The messages and the message box follow it; the toolbar, the side panel and the dialogs keep the system's size, as
a browser's zoom leaves its own controls alone. It is a step in a list, not a free factor, so that a few presses
reach any size and the size saved is always one of them.
"""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QWidget

from .settings import AppSettings

SCALES = (0.8, 0.9, 1.0, 1.1, 1.25, 1.4, 1.6, 1.8, 2.0)  # the chat's text against the system's
PLAIN = SCALES.index(1.0)


class TextSize:
    """The chat's text size, applied to `widgets` (the messages' column and the message box) and saved.

    Attributes:
        step: the index into SCALES in use.
    """

    def __init__(self, widgets: list[QWidget], settings: AppSettings) -> None:
        self._widgets = widgets
        self._settings = settings
        self.step = min(max(settings.text_size_step(PLAIN), 0), len(SCALES) - 1)  # a hand-edited file stays in range
        self._apply()

    @property
    def scale(self) -> float:
        return SCALES[self.step]

    def larger(self) -> None:
        self._go_to(self.step + 1)

    def smaller(self) -> None:
        self._go_to(self.step - 1)

    def reset(self) -> None:
        self._go_to(PLAIN)

    def _go_to(self, step: int) -> None:
        """Take `step` if there is one (pressing on past the largest or smallest size does nothing)."""
        if 0 <= step < len(SCALES) and step != self.step:
            self.step = step
            self._settings.save_text_size_step(step)
            self._apply()

    def _apply(self) -> None:
        """Every widget takes the system's font at the scale; the widgets inside them follow (messages added later
        too: a child takes its parent's font when it is added)."""
        font = QFont(QApplication.font())
        font.setPointSizeF(font.pointSizeF() * self.scale)
        for widget in self._widgets:
            widget.setFont(font)
