"""The cost model fitted to an answer's rounds, and its predictions here and for an Apple GPU."""

from __future__ import annotations

import pytest

from engine.decoding.generation import generate_stream
from engine.decoding.pair import ModelPair
from engine.decoding.policy import cost_model
from engine.decoding.policy.draft_length import expected_tokens
from engine.events import RoundEvent
from engine.params import GenerationParams


def round_event(index: int, k: int, accepted: int, draft_s: float, verify_s: float, timed: bool = True) -> RoundEvent:
    emitted = accepted + 1
    return RoundEvent(index, k, accepted, emitted, "model" if k else "none", draft_s, verify_s,
                      draft=tuple(range(k)), next_token=0, timed=timed)


def test_a_fit_recovers_the_costs_it_was_made_with() -> None:
    """Plain steps of 10 ms, +2 ms per verified token, 3 ms per drafted token, 3 of 4 drafts accepted."""
    rounds = [round_event(i, 0, 0, 0.0, 0.010) for i in range(5)]
    rounds += [round_event(5 + i, 4, 3, 0.012, 0.018) for i in range(6)]
    rounds.append(round_event(11, 4, 3, 0.001, 0.050, timed=False))  # device time in verify_s: not used
    model = cost_model.fit(rounds)
    assert model.acceptance == pytest.approx(21 / 28)
    assert model.step_s == pytest.approx(0.010) and model.verify_slope_s == pytest.approx(0.002)
    assert model.draft_token_s == pytest.approx(0.003) and model.draft_cost == pytest.approx(0.3)
    assert model.verify_cost(4) == pytest.approx(1.8) and model.rounds_used == 11
    assert model.predicted_tps(0) == pytest.approx(100.0)
    assert model.predicted_tps(4) == pytest.approx(expected_tokens(21 / 28, 4) / (4 * 0.003 + 0.010 + 0.008))
    assert model.measured_tps[0] == pytest.approx(100.0)
    assert model.measured_tps[4] == pytest.approx(4 * 7 / (6 * 0.030 + 0.051))
    assert model.step_measured


def test_without_plain_rounds_the_step_is_a_labelled_guess() -> None:
    model = cost_model.fit([round_event(i, 4, 3, 0.012, 0.018) for i in range(4)])
    assert not model.step_measured and model.step_s == pytest.approx(0.018 / 1.5)


def test_acceptance_counts_the_draft_tokens_the_target_reached() -> None:
    """One round accepts all 4 drafts, one rejects its first: 4 accepted of 5 reached, though of 8 verified."""
    model = cost_model.fit([round_event(0, 4, 4, 0.01, 0.02), round_event(1, 4, 0, 0.01, 0.02)])
    assert model.acceptance == pytest.approx(4 / 5) and model.verified_acceptance == pytest.approx(4 / 8)


def test_the_apple_gpu_prediction_uses_a_memory_bound_verify() -> None:
    model = cost_model.CostModel(acceptance=0.75, verified_acceptance=0.7, step_s=0.01, verify_slope_s=0.002, draft_token_s=0.003)
    k, speedup = model.apple_gpu(draft_cost=0.1)
    assert (k, speedup) == cost_model.best_speedup(0.75, 0.1, cost_model.APPLE_GPU_VERIFY_SLOPE)
    assert speedup > 1.5 and model.apple_gpu(draft_cost=2.0) == (0, 1.0)  # a draft dearer than the target never pays


def test_nothing_to_fit_before_a_drafted_round() -> None:
    assert cost_model.fit([round_event(0, 0, 0, 0.0, 0.01)]) is None


def test_a_real_answer_fits(tiny_pair: ModelPair) -> None:
    params = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=60, num_draft=4, adaptive=False)
    rounds = [e for e in generate_stream(tiny_pair, "Tell me a story", params) if isinstance(e, RoundEvent)]
    model = cost_model.fit(rounds)
    assert 0 <= model.acceptance <= 1 and model.step_s > 0 and model.rounds_used >= 3
    assert set(model.measured_tps) <= {len(r.draft) for r in rounds}


def test_ssd_prediction_hides_drafting_only_where_the_device_has_room() -> None:
    from engine.decoding.policy.cost_model import ssd_speedup
    from engine.decoding.policy.draft_length import expected_tokens

    a, c, slope, k = 0.7, 0.1, 0.04, 4
    sync = expected_tokens(a, k) / (k * c + 1 + slope * k)
    ready_and_free = ssd_speedup(a, c, slope, k, hit_rate=1.0, predrafted=8, overlap=1.0)
    assert ready_and_free == pytest.approx(expected_tokens(a, k) / (1 + slope * k)) and ready_and_free > sync
    # The same pre-drafts competing for the device: they cost more than the drafting they hide.
    assert ssd_speedup(a, c, slope, k, hit_rate=1.0, predrafted=24, overlap=0.0) < sync
    # Misses draft as synchronous rounds do, on top.
    assert ssd_speedup(a, c, slope, k, hit_rate=0.0, predrafted=16, overlap=1.0) < sync


def test_with_drafts_from_both_the_draft_cost_is_each_drafter_s_by_its_share() -> None:
    """Issue 22: with "Both", the card said draft cost 0.00 ("lookup drafts for free") and predicted 17 tok/s while
    the model drafted 6 of 14 rounds at 0.40-0.68 s each: one median over all rounds was lookup's 0."""
    from dataclasses import replace

    plain = [round_event(i, 0, 0, 0.0, 0.10) for i in range(4)]
    by_model = [round_event(4 + i, 4, 2, 0.40 + 0.04 * i, 0.18) for i in range(6)]  # 0.10-0.15 s a token
    by_lookup = [replace(round_event(10 + i, 4, 1, 0.0, 0.18), drafter="lookup") for i in range(8)]
    model = cost_model.fit(plain + by_model + by_lookup)
    assert model.drafter_shares == pytest.approx({"model": 24 / 56, "lookup": 32 / 56})
    assert model.drafter_token_s["lookup"] == 0.0 and model.drafter_token_s["model"] == pytest.approx(0.125)
    assert model.draft_token_s == pytest.approx(24 / 56 * model.drafter_token_s["model"])
    assert model.draft_cost > 0.4


def test_a_per_pass_latency_moves_the_speedup_from_e_over_v_towards_e() -> None:
    # 3 tokens per pass for a pass costing 1.5 steps: 2x on one machine, more the longer each pass waits.
    assert cost_model.pipelined_speedup(3.0, 1.5, 0.0) == pytest.approx(2.0)
    assert cost_model.pipelined_speedup(3.0, 1.5, 1.0) == pytest.approx(2.4)
    assert cost_model.pipelined_speedup(3.0, 1.5, 1000.0) == pytest.approx(3.0, rel=1e-3)
