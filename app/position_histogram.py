"""Acceptance by draft position: where in a draft the draft model starts to lose.

For each position 1..K of a draft, how many rounds verified a token there (pale bars; they sum to the drafted
count) and how many the target accepted (filled bars; they sum to the accepted count). Above each bar, the
acceptance at that position among the rounds that reached it (every token before it accepted): the number that
falls as a draft runs on, and the reason a longer K stops paying.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QWidget

from engine.events import RoundEvent

from .palette import is_dark, origin_colour


class PositionCounts:
    """Per draft position (index 0 is position 1): tokens verified there, reached there (all before accepted),
    and accepted there, added up round by round."""

    def __init__(self) -> None:
        self.drafted: list[int] = []
        self.reached: list[int] = []
        self.accepted: list[int] = []

    def add(self, event: RoundEvent) -> None:
        while len(self.drafted) < event.drafted:
            for counts in (self.drafted, self.reached, self.accepted):
                counts.append(0)
        for i in range(event.drafted):
            self.drafted[i] += 1
            self.reached[i] += i <= event.accepted
            self.accepted[i] += i < event.accepted

    def rate(self, i: int) -> float | None:
        """Acceptance at position i among the rounds that reached it."""
        return self.accepted[i] / self.reached[i] if self.reached[i] else None


class PositionHistogram(pg.PlotWidget):
    """The two bar series and the per-position rates, redrawn on request (the panel throttles it)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, enableMenu=False)  # no context menu, none built (an eighth of a window's start)
        self.counts = PositionCounts()
        self.setMinimumHeight(160)
        self.setMouseEnabled(False, False)
        self.hideButtons()
        self.setLabel("bottom", "position in the draft")
        self.setLabel("left", "tokens")
        self.drafted_bars = pg.BarGraphItem(x=[], height=[], width=0.75)
        self.accepted_bars = pg.BarGraphItem(x=[], height=[], width=0.75)
        self.addItem(self.drafted_bars)
        self.addItem(self.accepted_bars)
        self._labels: list[pg.TextItem] = []
        self._colour()

    def clear_counts(self) -> None:
        self.counts = PositionCounts()
        self.redraw()

    def add(self, rounds: list[RoundEvent]) -> None:
        for event in rounds:
            self.counts.add(event)

    def redraw(self) -> None:
        positions = list(range(1, len(self.counts.drafted) + 1))
        self.drafted_bars.setOpts(x=positions, height=self.counts.drafted)
        self.accepted_bars.setOpts(x=positions, height=self.counts.accepted)
        for label in self._labels:
            self.removeItem(label)
        self._labels = []
        for i, drafted in enumerate(self.counts.drafted):
            rate = self.counts.rate(i)
            label = pg.TextItem(f"{rate:.0%}" if rate is not None else "", anchor=(0.5, 1.0), color=self._text_colour())
            label.setPos(i + 1, drafted)
            self.addItem(label)
            self._labels.append(label)
        if positions:
            self.setXRange(0.4, len(positions) + 0.6, padding=0)
            self.setYRange(0, max(self.counts.drafted) * 1.2, padding=0)

    def _text_colour(self):  # QColor
        return self.palette().text().color()

    def _colour(self) -> None:
        accepted = origin_colour("accepted", self.palette())
        assert accepted is not None  # both palettes tint accepted drafts
        pale = self.palette().mid().color()
        self.drafted_bars.setOpts(brush=pg.mkBrush(pale.lighter(130) if not is_dark(self.palette()) else pale), pen=pg.mkPen(pale))
        self.accepted_bars.setOpts(brush=pg.mkBrush(accepted.darker(115)), pen=pg.mkPen(accepted.darker(140)))
        for axis in ("left", "bottom"):
            self.getAxis(axis).setPen(self._text_colour())
            self.getAxis(axis).setTextPen(self._text_colour())

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        """Follow the system into light or dark mode."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "accepted_bars"):
            self._colour()
            self.redraw()
