"""The Live tab's plots: readable at 900x600 (about 60-90 px each), cleared for each answer."""

from __future__ import annotations

import pytest

from app.live_plots import LABEL_GAP_PX, LivePlots, nice_step


def labelled(axis, low: float, high: float, size: float) -> list[float]:
    """The tick values an axis of `size` px writes a label at."""
    return [value for _spacing, values in axis.tickValues(low, high, size) for value in values]


def test_acceptance_spans_0_to_100_percent_from_the_first_launch(qtbot) -> None:
    """Issue 32: the empty acceptance axis showed -10 to 110."""
    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.show()
    low, high = plots.accept_plot.viewRange()[1]
    assert -5 < low <= 0 and 100 <= high < 105
    plots.add_acceptance(0.5, 80.0)
    plots.redraw()
    assert plots.accept_plot.viewRange()[1] == [low, high]  # its data never rescales it


@pytest.mark.parametrize("size", [50, 90, 300])
def test_a_short_rate_axis_writes_no_more_labels_than_its_height_holds(qtbot, size: int) -> None:
    """Issue 32: at 900x600 the rate axis wrote 1.0, 0.8 … 0 into 50 px, one label over the next."""
    plots = LivePlots()
    qtbot.addWidget(plots)
    values = labelled(plots.rate_plot.getAxis("left"), 0.0, 350.0, size)
    assert 2 <= len(values) <= max(3, size // LABEL_GAP_PX) + 1


@pytest.mark.parametrize("rates", [[0.1, 0.1, 0.1], [0.227, 0.229, 0.232], [12.0, 80.0, 40.0]])
def test_the_rate_s_scale_starts_at_zero(qtbot, rates: list[float]) -> None:
    """Autoranged, alike first rates of a slow answer spanned -4 … 4 tokens/s, and SmolLM2's steady 0.23 tok/s on
    a busy CPU read as a climb from 0.227 to 0.232."""
    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.show()
    for at_s, rate in zip((10.30, 10.35, 10.40), rates):
        plots.add_rate(at_s, rate)
    plots.redraw()
    qtbot.waitUntil(lambda: plots.rate_plot.viewRange()[0][0] > 1.0)  # the time axis autoranged to the new points
    low, high = plots.rate_plot.viewRange()[1]
    assert low == 0 and max(rates) < high < 1.2 * max(rates)


def test_ticks_fall_on_round_numbers() -> None:
    assert [nice_step(1.0, 2), nice_step(350.0, 10), nice_step(0.7, 4), nice_step(12.0, 1)] == [0.5, 50.0, 0.2, 20.0]


def test_each_plot_is_named_on_a_line_of_its_own_and_the_seconds_are_written_once(qtbot) -> None:
    """A rotated axis label longer than a short plot was cut off ("acceptance %" read "acceptance")."""
    plots = LivePlots()
    qtbot.addWidget(plots)
    for plot in (plots.rate_plot, plots.accept_plot):
        assert not plot.getAxis("left").label.isVisible()
    assert not plots.rate_plot.getPlotItem().getAxis("bottom").isVisible()
    assert plots.accept_plot.getAxis("bottom").labelText == "seconds"


def test_cleared_graphs_drop_the_last_answer_s_axes(qtbot) -> None:
    """Issue 32: after a switch or New chat the empty graphs kept the axes of the answer before."""
    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.show()  # a hidden plot does not autorange
    plots.rate_curve.setData([0.0, 40.0], [0.0, 500.0])
    plots.accept_curve.setData([0.0, 40.0], [0.0, 80.0])
    both = (plots.rate_plot, plots.accept_plot)
    qtbot.waitUntil(lambda: all(plot.viewRange()[0][1] >= 40.0 for plot in both))
    percent = plots.accept_plot.viewRange()[1]
    plots.reset()
    qtbot.waitUntil(lambda: all(plot.viewRange()[0][1] < 40.0 for plot in both) and plots.rate_plot.viewRange()[1][1] < 500)
    assert plots.rate_plot.getViewBox().autoRangeEnabled()[0]  # the next answer's data sets the time axis
    assert plots.accept_plot.viewRange()[1] == percent  # acceptance keeps its 0-100 % scale
