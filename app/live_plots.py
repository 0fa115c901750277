"""The Live tab's two plots over the seconds of the current answer: tokens per second, and the share of drafted
tokens accepted so far.

They are read together, so they share one time axis: its seconds are written once, under the lower plot. Each
plot's name is a line of text above it rather than a rotated axis label: at 900x600 a plot is under 100 px tall,
which cut "acceptance %" off and crowded pyqtgraph's ticks. Acceptance keeps a fixed 0-100 % scale with three
ticks; the rate's scale starts at 0 (autoranged, a slow answer's steady 0.23 tok/s read as a climb from 0.227 to
0.232, and alike first rates as -4 … 4) and its ticks keep a label's height apart.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

LABEL_GAP_PX = 28  # between two tick labels of a value axis: a line of text and room to tell them apart
SECONDS_GAP_PX = 56  # between two of the time axis's: a number of seconds and room to tell them apart
VALUE_AXIS_PX = 40  # the value axes' width, equal so that the two plots' time axes line up
EMPTY_RATE = 10.0  # tokens/s the empty rate plot spans: round numbers until an answer sets its own
PERCENT_TICKS = [[(0.0, "0"), (50.0, "50"), (100.0, "100")], [(25.0, ""), (75.0, "")]]
PERCENT_PADDING = 0.04  # a line at 0 or 100 % stays clear of the plot's edge


def nice_step(span: float, most: int) -> float:
    """The smallest 1, 2 or 5 times a power of ten that cuts `span` into at most `most` steps."""
    raw = span / max(most, 1)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


class SparseAxis(pg.AxisItem):
    """An axis with as many labelled ticks as its length holds, `gap_px` apart at least (pyqtgraph's own spacing
    wrote six labels into a 50 px value axis), and no unlabelled minor ones."""

    def __init__(self, orientation: str, gap_px: int) -> None:
        super().__init__(orientation)
        self.gap_px = gap_px

    def tickSpacing(self, low: float, high: float, size: float) -> list[tuple[float, float]]:  # noqa: N802 - pyqtgraph API
        span = high - low
        if span <= 0 or not math.isfinite(span):
            return super().tickSpacing(low, high, size)
        return [(nice_step(span, max(3, int(size // self.gap_px))), 0.0)]  # two labels at least in view: a scale


def caption(text: str) -> QLabel:
    label = QLabel(text)
    label.setStyleSheet("font-size: 11px;")
    return label


class LivePlots(QWidget):
    """The rate and acceptance plots of one answer, fed point by point and redrawn when asked (redrawing for every
    batch kept the GUI thread busy).

    Attributes:
        rate_plot, accept_plot: the plots (tokens per second above, acceptance in % below).
        rate_curve, accept_curve: their lines.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        pg.setConfigOptions(antialias=False, background=None)
        self.rate_plot = self._plot(SparseAxis("left", LABEL_GAP_PX))
        self.accept_plot = self._plot(pg.AxisItem("left"))
        self.accept_plot.getAxis("left").setTicks(PERCENT_TICKS)
        self.accept_plot.setYRange(0, 100, padding=PERCENT_PADDING)
        self.accept_plot.setXLink(self.rate_plot)
        self.rate_plot.hideAxis("bottom")  # the seconds are written once, below
        self.rate_plot.getPlotItem().setContentsMargins(0, 8, 6, 6)  # room for the lowest tick's label
        self.accept_plot.setLabel("bottom", "seconds")
        self.rate_plot.setMinimumHeight(60)  # both keep room for a trend: lets the window be 600 px tall
        self.accept_plot.setMinimumHeight(85)  # the same, with the time axis under it
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        for text, plot in (("Tokens / s", self.rate_plot), ("Accepted drafts, %", self.accept_plot)):
            layout.addWidget(caption(text))
            layout.addWidget(plot, 1)
        self.rate_curve = self.rate_plot.plot(pen=pg.mkPen("#4C78A8", width=2))
        self.accept_curve = self.accept_plot.plot(pen=pg.mkPen("#54A24B", width=2))
        self.reset()

    def _plot(self, value_axis: pg.AxisItem) -> pg.PlotWidget:
        plot = pg.PlotWidget(axisItems={"left": value_axis, "bottom": SparseAxis("bottom", SECONDS_GAP_PX)},
                             enableMenu=False)  # no context menu, none built (an eighth of a window's start)
        plot.setMouseEnabled(False, False)
        plot.hideButtons()
        plot.getViewBox().setDefaultPadding(0.08)
        plot.getPlotItem().setContentsMargins(0, 8, 6, 0)  # room for the top tick's label
        value_axis.setWidth(VALUE_AXIS_PX)
        for axis in ("left", "bottom"):
            plot.getAxis(axis).enableAutoSIPrefix(False)
        self._colour_axes(plot)
        return plot

    def _colour_axes(self, plot: pg.PlotWidget) -> None:
        text = self.palette().text().color()
        for axis in ("left", "bottom"):
            plot.getAxis(axis).setPen(text)
            plot.getAxis(axis).setTextPen(text)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        """Axes follow the system into light or dark mode."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "accept_plot"):
            for plot in (self.rate_plot, self.accept_plot):
                self._colour_axes(plot)

    def reset(self) -> None:
        """Empty plots for a new answer. Empty, they would autorange to nothing and keep the last answer's axes: they
        start from 0 s and round tokens/s, autoranged from the new answer's data on (acceptance keeps its 0-100 %,
        its time axis linked)."""
        self._times: list[float] = []
        self._rates: list[float] = []
        self._accept_times: list[float] = []
        self._accept_rates: list[float] = []
        self.rate_curve.setData([], [])
        self.accept_curve.setData([], [])
        self.rate_plot.setRange(xRange=(0, 1), yRange=(0, EMPTY_RATE), padding=0)
        self.rate_plot.enableAutoRange(axis="x")
        self.accept_plot.enableAutoRange(axis="x")

    def add_rate(self, at_s: float, tokens_per_s: float) -> None:
        self._times.append(at_s)
        self._rates.append(tokens_per_s)

    def add_acceptance(self, at_s: float, percent: float) -> None:
        self._accept_times.append(at_s)
        self._accept_rates.append(percent)

    def redraw(self) -> None:
        """The lines so far; the rate's scale from 0 to a tenth above its highest point."""
        self.rate_curve.setData(self._times, self._rates)
        top = max(self._rates, default=0.0)
        self.rate_plot.setYRange(0, 1.1 * top if top > 0 else EMPTY_RATE, padding=0)
        self.accept_curve.setData(self._accept_times, self._accept_rates)
