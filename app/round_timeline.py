"""The round timeline: every round of the answer as one bar, live and scrollable.

A round is one target pass. Its bar has two halves on one axis: above it, the round's time (draft time stacked
under verify time, on a scale that the slowest rounds do not flatten; with the target across Macs, the part of the
verify time spent on the network is the top of it, in its own colour); below it, the tokens the round decided
on, one cell each: the accepted draft tokens, then the round's own token (a correction, a bonus, or a plain
target token), then the other draft tokens the correction threw away, hollow. So the cells below a bar are the
K the policy chose (K + 1 when every draft token was accepted), and their colours say how the round went.

Only the columns in view are painted, so a long answer stays cheap to draw; the view follows the newest round
unless the user has scrolled back.
"""

from __future__ import annotations

import statistics

from PySide6.QtCore import QEvent, QRect, Qt
from PySide6.QtGui import QColor, QHelpEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QFrame, QScrollArea, QToolTip, QWidget

from engine.events import RoundEvent

from .palette import ghost_colour, is_dark, origin_colour

COLUMN_W = 8
GAP = 3
TIME_H = 90  # pixels above the axis
CELL_H = 6
CELLS_H = 17 * CELL_H  # room for K = 16 plus its bonus
MARGIN = 4


def time_colours(dark: bool) -> tuple[QColor, QColor]:
    """(draft time, verify time) bar colours: draft the quieter of the two in either mode."""
    return (QColor("#a9c9e6"), QColor("#4c78a8")) if not dark else (QColor("#3d5f82"), QColor("#8fbbe8"))


def network_colour(dark: bool) -> QColor:
    """The network's part of a round's time (the target across Macs): warm, apart from the two blues."""
    return QColor("#f58518") if not dark else QColor("#ffab5e")


def round_cells(event: RoundEvent) -> list[str]:
    """The cells under a round's bar, top down: "accepted" per accepted draft token, the round's own token's
    origin, then "rejected" per draft token after the one its correction replaced."""
    thrown_away = max(event.drafted - event.accepted - 1, 0)
    own = [event.next_origin] if event.emitted > event.accepted else []
    return ["accepted"] * event.accepted + own + ["rejected"] * thrown_away


def describe_round(event: RoundEvent) -> str:
    """A round's tooltip: what it drafted, what the target kept, and what each half cost."""
    lines = [f"Round {event.round + 1}: {event.drafter}, K = {len(event.draft)}"]
    if event.drafted:
        lines.append(f"{event.accepted} of {event.drafted} draft tokens accepted, then a {event.next_origin} token")
    else:
        lines.append("nothing drafted: one plain target token")
    timing = "measured apart" if event.timed else "draft queued, its device time mostly in verify"
    lines.append(f"draft {event.draft_s * 1000:.1f} ms, verify {event.verify_s * 1000:.1f} ms ({timing})")
    if event.network_s is not None:
        lines.append(f"network {event.network_s * 1000:.1f} ms of it: the head's message and the hops between the Macs")
    if event.predicted_tps is not None:
        plain = f", K = 0: {event.predicted_tps_plain:.1f}" if event.predicted_tps_plain is not None else ""
        lines.append(f"policy predicted {event.predicted_tps:.1f} tok/s with this K{plain}")
    return "\n".join(lines)


class TimelineCanvas(QWidget):
    """The painted columns (as wide as the rounds need; the scroll area shows part of it).

    Attributes:
        rounds: the answer's RoundEvents, in order.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rounds: list[RoundEvent] = []
        self._scale_s = 0.0
        self.setFixedHeight(TIME_H + CELLS_H + 2 * MARGIN)
        self._resize()

    def clear(self) -> None:
        self.rounds = []
        self._scale_s = 0.0
        self._resize()
        self.update()

    def add(self, rounds: list[RoundEvent]) -> None:
        self.rounds.extend(rounds)
        self._scale_s = self._time_scale()
        self._resize()
        self.update()

    def _time_scale(self) -> float:
        """The time the full bar height stands for: the slowest ordinary round (95th percentile), so one slow
        first round (warm-up) does not flatten all the others; longer rounds are clipped."""
        totals = sorted(r.draft_s + r.verify_s for r in self.rounds[-400:])
        if not totals:
            return 0.0
        return max(totals[int(0.95 * (len(totals) - 1))], statistics.median(totals), 1e-6)

    def _resize(self) -> None:
        self.setFixedWidth(max(len(self.rounds) * (COLUMN_W + GAP) + 2 * MARGIN, 40))

    def bar_rects(self, index: int) -> tuple[QRect, QRect]:
        """(draft time, verify time) rectangles of a round's bar, draft below verify, rising from the axis."""
        event = self.rounds[index]
        x = MARGIN + index * (COLUMN_W + GAP)
        axis = MARGIN + TIME_H
        draft_h = self._height(event.draft_s)
        verify_h = min(self._height(event.draft_s + event.verify_s), TIME_H) - draft_h
        return QRect(x, axis - draft_h, COLUMN_W, draft_h), QRect(x, axis - draft_h - verify_h, COLUMN_W, verify_h)

    def network_rect(self, index: int) -> QRect:
        """The network's part of a round's time: the top of its verify bar (empty on one machine)."""
        event = self.rounds[index]
        verify = self.bar_rects(index)[1]
        if not event.network_s or not event.verify_s:
            return QRect(verify.x(), verify.y(), COLUMN_W, 0)
        height = round(verify.height() * min(event.network_s / event.verify_s, 1.0))
        return QRect(verify.x(), verify.y(), COLUMN_W, height)

    def _height(self, seconds: float) -> int:
        return min(int(round(TIME_H * seconds / self._scale_s)), TIME_H) if self._scale_s else 0

    def cell_rect(self, index: int, cell: int) -> QRect:
        x = MARGIN + index * (COLUMN_W + GAP)
        return QRect(x, MARGIN + TIME_H + 2 + cell * CELL_H, COLUMN_W, CELL_H - 1)

    def round_at(self, x: int) -> int | None:
        index = (x - MARGIN) // (COLUMN_W + GAP)
        return index if 0 <= index < len(self.rounds) else None

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt API
        painter = QPainter(self)
        dark = is_dark(self.palette())
        draft_colour, verify_colour = time_colours(dark)
        first = max(self.round_at(event.rect().left()) or 0, 0)
        last = min((event.rect().right() - MARGIN) // (COLUMN_W + GAP) + 1, len(self.rounds))
        painter.setPen(self.palette().mid().color())
        painter.drawLine(0, MARGIN + TIME_H, self.width(), MARGIN + TIME_H)
        painter.setPen(Qt.PenStyle.NoPen)
        for index in range(first, last):
            draft_rect, verify_rect = self.bar_rects(index)
            painter.fillRect(draft_rect, draft_colour)
            painter.fillRect(verify_rect, verify_colour)
            painter.fillRect(self.network_rect(index), network_colour(dark))
            self._paint_cells(painter, index)
        painter.end()

    def _paint_cells(self, painter: QPainter, index: int) -> None:
        for cell, origin in enumerate(round_cells(self.rounds[index])):
            rect = self.cell_rect(index, cell)
            if origin == "rejected":
                painter.setPen(ghost_colour(self.palette()))
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawRect(rect.adjusted(0, 0, -1, -1))
                painter.setPen(Qt.PenStyle.NoPen)
            else:
                painter.fillRect(rect, origin_colour(origin, self.palette()) or self.palette().mid().color())

    def event(self, event: QEvent) -> bool:
        if isinstance(event, QHelpEvent) and event.type() == QEvent.Type.ToolTip:
            index = self.round_at(event.pos().x())
            if index is not None:
                QToolTip.showText(event.globalPos(), describe_round(self.rounds[index]), self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)


class RoundTimeline(QScrollArea):
    """The timeline, scrolled sideways; it follows the newest round while the user is at the right edge."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.canvas = TimelineCanvas()
        self.setWidget(self.canvas)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFixedHeight(self.canvas.height() + self.horizontalScrollBar().sizeHint().height() + 2)
        self._follow = True
        self.horizontalScrollBar().valueChanged.connect(self._note_position)
        self.horizontalScrollBar().rangeChanged.connect(self._keep_following)

    def clear(self) -> None:
        self.canvas.clear()
        self._follow = True

    def add(self, rounds: list[RoundEvent]) -> None:
        self.canvas.add(rounds)

    def _note_position(self, value: int) -> None:
        self._follow = value >= self.horizontalScrollBar().maximum() - COLUMN_W

    def _keep_following(self, _minimum: int, maximum: int) -> None:
        if self._follow:
            self.horizontalScrollBar().setValue(maximum)
