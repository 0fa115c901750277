"""The round timeline: one painted bar per round, its halves the round's draft and verify times, its cells the
round's decisions."""

from __future__ import annotations

from app.palette import is_dark
from app.round_timeline import TIME_H, RoundTimeline, describe_round, network_colour, round_cells, time_colours
from engine.events import RoundEvent
from tests.app.conftest import send_and_wait


def test_the_timeline_has_one_painted_bar_per_round(make_window, qtbot) -> None:
    window = make_window(max_tokens=60)
    result = send_and_wait(qtbot, window, "What is speculative decoding?")
    canvas = window.stats.timeline.canvas
    assert len(canvas.rounds) == result.stats.rounds
    image = canvas.grab().toImage()
    verify_colour = time_colours(is_dark(canvas.palette()))[1]
    painted = 0
    for index, event in enumerate(canvas.rounds):
        _, verify = canvas.bar_rects(index)
        if verify.height() >= 2:
            assert image.pixelColor(verify.center()) == verify_colour
            painted += 1
        cells = round_cells(event)
        assert cells.count("accepted") == event.accepted
        ended_the_answer = index == len(canvas.rounds) - 1 and event.emitted == event.accepted  # its own token: the end
        full = len(event.draft) + 1 if event.accepted == len(event.draft) else len(event.draft)
        assert len(cells) == full - ended_the_answer
    assert painted >= result.stats.rounds // 2  # most bars are tall enough to sample (the rest are clipped or tiny)


def test_bar_heights_follow_the_times_on_a_scale_the_slowest_round_does_not_flatten() -> None:
    rounds = [RoundEvent(i, 4, 2, 3, "model", 0.010, 0.030, draft=(1, 2, 3, 4), next_token=5) for i in range(40)]
    rounds[0] = RoundEvent(0, 4, 2, 3, "model", 0.010, 3.0, draft=(1, 2, 3, 4), next_token=5)  # a warm-up round
    timeline = RoundTimeline()
    timeline.add(rounds)
    draft, verify = timeline.canvas.bar_rects(5)
    assert draft.height() + verify.height() == TIME_H  # an ordinary round fills the scale
    assert abs(verify.height() - 3 * draft.height()) <= 2
    first_draft, first_verify = timeline.canvas.bar_rects(0)
    assert first_draft.height() + first_verify.height() == TIME_H  # clipped, not towering


def test_the_timeline_follows_new_rounds_unless_scrolled_back(qtbot) -> None:
    timeline = RoundTimeline()
    qtbot.addWidget(timeline)
    timeline.resize(200, timeline.height())
    timeline.show()
    event = RoundEvent(0, 2, 1, 2, "model", 0.01, 0.02, draft=(1, 2), next_token=3)
    timeline.add([event] * 100)
    bar = timeline.horizontalScrollBar()
    assert bar.maximum() > 0 and bar.value() == bar.maximum()
    bar.setValue(0)
    timeline.add([event] * 10)
    assert bar.value() == 0


def test_a_bars_tooltip_says_what_the_round_did() -> None:
    event = RoundEvent(6, 4, 1, 2, "model", 0.004, 0.021, draft=(1, 2, 3, 4), next_token=9, predicted_tps=50.0,
                       predicted_tps_plain=40.0, timed=True)
    text = describe_round(event)
    assert "Round 7: model, K = 4" in text and "1 of 4 draft tokens accepted, then a corrected token" in text
    assert "draft 4.0 ms, verify 21.0 ms (measured apart)" in text and "predicted 50.0 tok/s" in text
    assert round_cells(event) == ["accepted", "corrected", "rejected", "rejected"]


def test_the_network_s_part_of_a_round_tops_its_verify_bar_in_its_own_colour(qtbot) -> None:
    across = RoundEvent(0, 2, 1, 2, "model", 0.010, 0.030, draft=(1, 2), next_token=3, network_s=0.015)
    alone = RoundEvent(1, 2, 1, 2, "model", 0.010, 0.030, draft=(1, 2), next_token=3)
    timeline = RoundTimeline()
    qtbot.addWidget(timeline)
    timeline.add([across, alone])
    canvas = timeline.canvas
    verify, network = canvas.bar_rects(0)[1], canvas.network_rect(0)
    assert network.top() == verify.top() and abs(network.height() - verify.height() / 2) <= 1
    assert canvas.network_rect(1).height() == 0
    image = canvas.grab().toImage()
    dark = is_dark(canvas.palette())
    assert image.pixelColor(network.center()) == network_colour(dark)
    assert image.pixelColor(canvas.bar_rects(1)[1].center()) == time_colours(dark)[1]
    assert "network 15.0 ms" in describe_round(across) and "network" not in describe_round(alone)
