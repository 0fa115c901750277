"""Each drafter on an Apple GPU: tau / (passes c + v(K)) from published acceptance and a draft cost measured here."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.decoding.policy.apple_prediction import (
    MEASURED_COST,
    PUBLISHED,
    THIS_ANSWER,
    PublishedAcceptance,
    costs_in_answer,
    predicted_speedup,
    predictions,
)
from engine.decoding.policy.cost_model import fit
from tests.engine.decoding.policy.test_cost_model import round_event


def test_a_block_drafter_pays_one_pass_a_round_and_a_token_drafter_one_per_token() -> None:
    block = PublishedAcceptance(7.3, 15, True, "", "")
    chain = PublishedAcceptance(2.77, 7, False, "", "")
    assert (block.passes, chain.passes) == (1, 7)
    assert predicted_speedup(block, 0.31) == pytest.approx(7.3 / (0.31 + 1 + 0.04 * 15))
    assert predicted_speedup(chain, 0.10) == pytest.approx(2.77 / (7 * 0.10 + 1 + 0.04 * 7))
    assert predicted_speedup(chain, 0.0, slope=0.0) == pytest.approx(2.77)  # free drafts and a free verify: tau itself


def test_every_published_drafter_has_a_source_and_a_cost_measured_here() -> None:
    assert set(PUBLISHED) == set(MEASURED_COST) >= {"mtp", "eagle3", "dflash", "dspark"}
    for drafter, published in PUBLISHED.items():
        assert published.source and published.setting and 1 <= published.tokens_per_verify <= published.k + 1, drafter
    rows = {row.drafter: row for row in predictions()}
    assert rows["dflash"].speedup == pytest.approx(predicted_speedup(PUBLISHED["dflash"], MEASURED_COST["dflash"].c))
    assert not any(row.measured_here for row in rows.values())


def test_a_drafter_that_drafted_in_the_answer_is_predicted_with_the_cost_measured_there() -> None:
    """A block drafter's c is per pass: its seconds per draft token times the tokens a pass drafted."""
    plain = [round_event(i, 0, 0, 0.0, 0.010) for i in range(4)]
    dflash = [replace(round_event(4 + i, 15, 6, 0.006, 0.016), drafter="dflash") for i in range(3)]
    eagle3 = [replace(round_event(7 + i, 4, 2, 0.008, 0.012), drafter="eagle3") for i in range(3)]
    rounds = plain + dflash + eagle3
    costs = costs_in_answer(fit(rounds), rounds)
    assert costs["dflash"] == pytest.approx(0.006 / 15 / 0.010 * 15)  # 0.6 target steps a block pass
    assert costs["eagle3"] == pytest.approx(0.008 / 4 / 0.010)  # 0.2 a token
    rows = {row.drafter: row for row in predictions(costs)}
    assert rows["dflash"].measured_here and rows["dflash"].cost_setting == THIS_ANSWER and rows["dflash"].c == costs["dflash"]
    assert rows["dflash"].speedup == pytest.approx(predicted_speedup(PUBLISHED["dflash"], costs["dflash"]))
    assert not rows["mtp"].measured_here and rows["mtp"].c == MEASURED_COST["mtp"].c
