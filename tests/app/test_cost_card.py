"""The cost-model card: the fit of this answer, predicted against measured, and a labelled Apple GPU prediction."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QCoreApplication

from app.cost_card import STANDARD, WAITING, CostCard
from tests.app.conftest import send_and_wait


def test_the_card_shows_the_fit_of_the_answer_and_a_labelled_prediction(make_window, qtbot) -> None:
    window = make_window(max_tokens=80)
    result = send_and_wait(qtbot, window, "Tell me a story about a ship")
    card = window.stats.cost_card
    assert card.model is not None
    rounds = window.stats.timeline.canvas.rounds
    reached = result.stats.accepted + sum(1 for r in rounds if r.accepted < r.drafted)
    assert card.model.acceptance == pytest.approx(result.stats.accepted / reached)
    assert card.model.verified_acceptance == pytest.approx(result.stats.acceptance_rate)
    assert f"acceptance a = {card.model.acceptance:.0%} of draft tokens reached" in card.here.text()
    ks, predicted = card.predicted.getData()
    assert list(predicted) == pytest.approx([card.model.predicted_tps(int(k)) for k in ks])
    measured_k, measured_tps = card.measured.getData()
    assert dict(zip(map(int, measured_k), measured_tps)) == pytest.approx(card.model.measured_tps)
    assert "Prediction for an Apple GPU" in card.gpu.text() and "not a measurement" in card.gpu.text()
    share = window.session.pair.draft_weight_share
    assert 0 < share < 1 and f"{share:.2f}" in card.gpu.text()


def test_standard_decoding_has_nothing_to_model(make_window, qtbot) -> None:
    window = make_window(max_tokens=20)
    window.toolbar.speculative_action.setChecked(False)
    send_and_wait(qtbot, window, "Hello")
    assert window.stats.cost_card.model is None and window.stats.cost_card.here.text() == STANDARD


def test_before_any_drafted_round_the_card_says_what_it_waits_for(qtbot) -> None:
    """With no plot: an empty one showed axes from 0 to 1 with nothing to read, its top label cut in half."""
    from tests.engine.decoding.policy.test_cost_model import round_event

    card = CostCard()
    qtbot.addWidget(card)
    card.show()
    assert card.here.text() == WAITING and card.gpu.text() == ""
    assert card.plot.isHidden() and card.key.isHidden()
    card.add([round_event(i, 0, 0, 0.0, 0.10) for i in range(4)] + [round_event(4 + i, 4, 2, 0.44, 0.18) for i in range(6)])
    card.redraw()
    assert card.plot.isVisible() and card.key.isVisible()


def test_with_drafts_from_both_the_card_names_each_drafter_s_cost(qtbot) -> None:
    from dataclasses import replace

    from tests.engine.decoding.policy.test_cost_model import round_event

    card = CostCard()
    qtbot.addWidget(card)
    card.reset("speculative", draft_cost_on_gpu=0.3)
    card.add([round_event(i, 0, 0, 0.0, 0.10) for i in range(4)] + [round_event(4 + i, 4, 2, 0.44, 0.18) for i in range(6)]
             + [replace(round_event(10 + i, 4, 1, 0.0, 0.18), drafter="lookup") for i in range(8)])
    card.redraw()
    assert "(lookup 0.00 for 57% of draft tokens; draft model 1.10 for 43% of draft tokens)" in card.here.text()
    assert ("lookup drafts for free (57% of draft tokens); a draft model step costs its weights' share, 0.30 (43% of "
            "draft tokens)") in card.gpu.text()


def test_the_card_predicts_each_drafter_from_published_acceptance_labelled_as_such(qtbot) -> None:
    """Issue 23: the card predicted only the draft model, from the acceptance measured here."""
    from dataclasses import replace

    from engine.decoding.policy.apple_prediction import PUBLISHED, predicted_speedup, predictions
    from tests.engine.decoding.policy.test_cost_model import round_event

    card = CostCard()
    qtbot.addWidget(card)
    text = card.published.text()
    assert "prediction from published acceptance, not measured here" in text
    for row in predictions():  # before any answer: every drafter, with the benchmark's c
        assert f"{row.speedup:.2f}x" in text and f"published τ {row.published.tokens_per_verify:g} at K = {row.published.k}" in text
    assert "built-in MTP drafter" in text and "EAGLE-3 drafter" in text and "DFlash drafter" in text
    assert PUBLISHED["eagle3"].source in card.published.toolTip()
    card.add([round_event(i, 0, 0, 0.0, 0.010) for i in range(4)]
             + [replace(round_event(4 + i, 4, 2, 0.008, 0.012), drafter="eagle3") for i in range(4)])
    card.redraw()
    eagle3 = predicted_speedup(PUBLISHED["eagle3"], 0.008 / 4 / 0.010)  # c: 2 ms per draft token over 10 ms steps
    assert f"EAGLE-3 drafter: <b>{eagle3:.2f}x</b> (published τ 2.77 at K = 7; c = 0.20 target steps per token from this answer)" in (
        card.published.text())
    assert "EAGLE-3 drafter tokens cost 0.20 each, as measured in this answer" in card.gpu.text()
    assert "weights' share" not in card.gpu.text()  # it has no weights share of its own: it used to say 0.00


def test_the_y_label_is_never_given_a_scale_the_card_cuts_off(qtbot) -> None:
    """pyqtgraph scaled a range of very small or large speeds and said so in the label, "tokens / s (x0.001)", which
    the card cut off."""
    card = CostCard()
    qtbot.addWidget(card)
    card.show()
    card.plot.setYRange(0.0002, 0.0004, padding=0)
    QCoreApplication.processEvents()
    assert card.plot.getAxis("left").labelString().count("(") == 0


def test_the_apple_section_says_a_block_drafters_cost_per_token_as_the_card_does() -> None:
    """Issue 32: one DFlash answer showed "0.26 target steps per token" above and "c 1.03" (per block pass) here."""
    from app.cost_card import describe_published
    from engine.decoding.policy.apple_prediction import predictions

    dflash = next(row for row in predictions({"dflash": 1.6}) if row.drafter == "dflash")
    assert f"c = {1.6 / dflash.published.k:.2f} target steps per token from this answer" in describe_published([dflash])
