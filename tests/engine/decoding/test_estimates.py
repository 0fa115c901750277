"""The policy's estimates forget at a known rate: a drafter's past can neither keep it nor sink it for long."""

from __future__ import annotations

import random

import pytest

from engine.decoding.estimates import DECAY, EVIDENCE, AcceptanceEstimate, RecentCost


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
