"""The policy's estimates forget at a known rate: a drafter's past can neither keep it nor sink it for long."""

from __future__ import annotations

import random

import pytest

from engine.decoding.policy.estimates import DECAY, EVIDENCE, AcceptanceEstimate, PositionalAcceptance, RecentCost, expected_tokens


def test_an_acceptance_estimate_weighs_at_most_evidence_tokens() -> None:
    estimate = AcceptanceEstimate()
    for _ in range(500):  # a long good stretch: 8 of 8 accepted, one round in five rejected once
        estimate.add(8, 0)
        estimate.add(7, 1)
    assert estimate.accepted + estimate.rejected == pytest.approx(EVIDENCE)
    rounds = 0
    while estimate.mean > 0.5:  # now every draft is rejected at once
        estimate.add(0, 1)
        rounds += 1
    assert rounds <= EVIDENCE  # 30 here; uncapped, the good stretch (7,500 accepted tokens) outweighed any run of rejections


def test_counts_decay_towards_the_prior() -> None:
    estimate = AcceptanceEstimate(accepted=40.0, rejected=8.0)
    estimate.decay()
    assert estimate.accepted == pytest.approx(40.0 * DECAY) and estimate.rejected == pytest.approx(8.0 * DECAY)


def test_samples_spread_with_uncertainty_and_centre_on_the_mean() -> None:
    rng = random.Random(1)
    sure, unsure = AcceptanceEstimate(accepted=40.0, rejected=8.0), AcceptanceEstimate(accepted=1.0, rejected=0.2)
    spread = [max(draws) - min(draws) for draws in ([e.sample(rng) for _ in range(400)] for e in (sure, unsure))]
    assert spread[0] < spread[1]
    assert sum(sure.sample(rng) for _ in range(4000)) / 4000 == pytest.approx(sure.mean, abs=0.01)


def test_a_recent_cost_is_the_median_of_the_latest_samples() -> None:
    cost = RecentCost()
    for seconds in (0.05, 0.05, 2.0, 0.05):
        cost.add(seconds)
    assert cost.median == 0.05


def test_acceptance_by_position_counts_the_accepted_run_and_the_one_rejection() -> None:
    estimate = PositionalAcceptance()
    estimate.add(2, 5)  # positions 1 and 2 accepted, 3 rejected, 4 and 5 not reached
    estimate.add(5, 5)  # all five accepted
    assert estimate.accepted[:5] == [2, 2, 1, 1, 1] and estimate.rejected[:5] == [0, 0, 1, 0, 0]


def test_positions_without_evidence_take_the_pooled_rate_and_evidence_pulls_away_from_it() -> None:
    estimate = PositionalAcceptance()
    for _ in range(40):
        estimate.add(1, 3)  # position 1 always accepted, position 2 always rejected, 3 never reached
    first, second, third, fourth = estimate.rates(0.5, 4)
    assert first > 0.9 and second < 0.1 and third == fourth == pytest.approx(0.5)


def test_expected_tokens_by_position_multiply_along_the_block() -> None:
    assert expected_tokens([1.0, 0.5, 0.0], 3) == pytest.approx(1 + 1 + 0.5)
    assert expected_tokens([0.5, 0.5], 2) == pytest.approx(expected_tokens(0.5, 2))
