"""SSD: drafts made during the verify keep the output exact, are used when their outcome comes, and the switch keeps
the faster of SSD and synchronous rounds."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.decoding.cached_model import CachedModel
from engine.decoding.drafting.ssd import LEARN_ROUNDS, PROBE_EVERY, SsdSwitch, likely_lengths, outcome_candidates, side_stream
from engine.decoding.generation import generate, generate_stream
from engine.decoding.pair import ModelPair
from engine.events import RoundEvent
from engine.models.loading import LoadedModel
from engine.params import GenerationParams
from tests.helpers import assert_first_two_tokens_follow, first_two_token_laws, independent_answers

GREEDY = GenerationParams(drafter="model", temperature=0.0, top_p=1.0, max_tokens=48, adaptive=False)
ALWAYS = dict(ssd=True, ssd_always=True)  # every round pre-drafts, whatever the switch would choose
PROMPTS = ["What is speculative decoding?", "def fibonacci(n):"]


@pytest.fixture
def echo_pair(tiny_target: LoadedModel) -> ModelPair:
    """Draft == target: every greedy outcome is the draft's own top guess, so SSD's guesses come true."""
    return ModelPair(tiny_target, tiny_target)


@pytest.mark.parametrize("fanout, k", [(1, 1), (1, 2), (1, 4), (1, 8), (4, 1), (4, 4)])
def test_greedy_ssd_is_token_identical_to_standard(tiny_pair: ModelPair, tiny_standard, k: int, fanout: int) -> None:
    """K = 1 (a pre-draft after the bonus token), 2, 4 and 8 (every accepted length SSD guesses, up to the longest
    draft here) with one guess, and K = 1 and 4 with four forks of one cache (the full 1-8 x 1-4 grid cost four
    times the time). Four forks run the one guess's code once per fork at each accepted length, so four forks at
    K = 2 and 8 (7 of this test's 17 CPU s) took no path these cases leave out."""
    for prompt in PROMPTS:
        expected = tiny_standard(prompt, GREEDY)
        result = generate(prompt, tiny_pair, GREEDY.replace(num_draft=k, **ALWAYS, fanout=fanout))
        assert result.tokens == expected, (k, fanout, prompt)
        assert result.stats.predrafted > 0


@pytest.mark.parametrize("k", (1, 4, 8))
def test_guessed_outcomes_start_rounds_with_their_draft_ready(echo_pair: ModelPair, k: int) -> None:
    expected = generate(PROMPTS[0], echo_pair, GREEDY.replace(mode="standard", max_tokens=80)).tokens
    result = generate(PROMPTS[0], echo_pair, GREEDY.replace(num_draft=k, **ALWAYS, fanout=1, max_tokens=80))
    s = result.stats
    assert result.tokens == expected
    assert s.ssd_hits > 0 and s.ssd_hits <= s.ssd_checked and 0 <= s.predraft_wasted < s.predrafted
    # Once the acceptance estimate learns that everything is accepted, the bonus case is pre-drafted first.
    assert s.fanout_hit_rate >= 0.5


def test_round_events_carry_the_ssd_figures(echo_pair: ModelPair) -> None:
    events = list(generate_stream(echo_pair, PROMPTS[0], GREEDY.replace(num_draft=3, **ALWAYS, fanout=2, max_tokens=60)))
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    result = events[-1]
    assert sum(r.ssd_hit is True for r in rounds) == result.stats.ssd_hits > 0
    assert sum(r.predrafted for r in rounds) == result.stats.predrafted
    assert all(r.trace_record()["ssd_hit"] in (True, False, None) for r in rounds)
    assert rounds[0].ssd_hit is None  # nothing could be pre-drafted before the first round
    assert "of drafts ready" in result.summary()


def test_a_cancel_ends_an_ssd_answer_after_the_round_that_saw_it(echo_pair: ModelPair) -> None:
    seen = []
    params = GREEDY.replace(num_draft=4, **ALWAYS, max_tokens=200)
    for event in generate_stream(echo_pair, PROMPTS[0], params, cancel=lambda: len(seen) >= 3):
        if isinstance(event, RoundEvent):
            seen.append(event)
    assert event.finish_reason == "cancelled" and event.stats.rounds == 3 and event.stats.predrafted > 0
    # The pre-drafts of the last round were left behind; the next answer starts clean and stays exact.
    expected = generate(PROMPTS[1], echo_pair, GREEDY.replace(mode="standard")).tokens
    assert generate(PROMPTS[1], echo_pair, params.replace(max_tokens=48)).tokens == expected


def test_without_ssd_nothing_is_pre_drafted(tiny_pair: ModelPair) -> None:
    s = generate(PROMPTS[0], tiny_pair, GREEDY.replace(num_draft=4)).stats
    assert (s.predrafted, s.ssd_checked, s.fanout_hit_rate) == (0, 0, None)


@pytest.mark.parametrize("family", ["llama-sliding", "qwen3_next"])
def test_a_draft_cache_that_cannot_fork_drafts_synchronously(family_models, family: str) -> None:
    """Sliding windows and recurrent state are not plain KV caches: those drafts are made the usual way."""
    pair = ModelPair(*family_models(family))
    expected = generate(PROMPTS[0], pair, GREEDY.replace(mode="standard")).tokens
    result = generate(PROMPTS[0], pair, GREEDY.replace(num_draft=4, **ALWAYS))
    assert result.tokens == expected and result.stats.predrafted == 0 and result.stats.drafted > 0


def test_a_fork_leaves_the_cache_it_came_from_as_it_was(tiny_target: LoadedModel) -> None:
    ids = list(range(5, 30))
    cached = CachedModel(tiny_target.model)
    cached.forward(mx.array(ids, dtype=mx.uint32), ids=ids)
    twin = cached.fork(20)
    assert twin is not None and twin.tokens == ids[:20]
    twin.forward(mx.array([7, 8, 9, 10, 11, 12], dtype=mx.uint32), ids=[7, 8, 9, 10, 11, 12])
    after = cached.forward(mx.array([40], dtype=mx.uint32), ids=[40])
    fresh = CachedModel(tiny_target.model).forward(mx.array(ids + [40], dtype=mx.uint32), ids=ids + [40])[-1:]
    np.testing.assert_allclose(np.array(after), np.array(fresh), atol=1e-4)
    assert cached.tokens == ids + [40]


def test_likely_lengths_follow_the_acceptance_rate() -> None:
    assert likely_lengths(0.9, 4) == [4, 0]  # 0.9^4 = 0.66, then a rejection at once: 0.1
    assert likely_lengths(0.2, 4) == [0, 1]
    assert likely_lengths(0.5, 1, count=3) == [0, 1]


def test_outcome_candidates_rank_by_the_draft_and_never_guess_the_rejected_token() -> None:
    row = mx.array([0.1, 3.0, 2.0, 5.0, 1.0])
    assert outcome_candidates(row, 3, None).tolist() == [3, 1, 2]
    assert outcome_candidates(row, 3, mx.array(3)).tolist() == [1, 2, 4]


def _run_switch(ssd_s: float, sync_s: float, rounds: int) -> list[bool]:
    switch, choices = SsdSwitch(), []
    for _ in range(rounds):
        ssd = switch.use_ssd()
        choices.append(ssd)
        switch.record(ssd, tokens=3, seconds=ssd_s if ssd else sync_s)
    return choices


def test_the_switch_keeps_the_faster_mode_and_probes_the_other_at_a_bounded_cost() -> None:
    learning = 2 * LEARN_ROUNDS
    twice_as_slow = _run_switch(0.2, 0.1, learning + 3 * PROBE_EVERY)
    assert twice_as_slow[:learning].count(True) == LEARN_ROUNDS
    assert 1 <= twice_as_slow[learning:].count(True) <= 3  # tries only: about one in 34 rounds
    five_times_slower = _run_switch(0.5, 0.1, learning + 120)
    assert five_times_slower[learning:].count(True) == 0  # tried once in ~133 rounds, so that trying costs <= 3%
    faster = _run_switch(0.05, 0.1, learning + 3 * PROBE_EVERY)
    assert faster[learning:].count(False) <= 3


def test_ssd_without_always_lets_the_switch_choose_and_stays_exact(tiny_pair: ModelPair) -> None:
    expected = generate(PROMPTS[1], tiny_pair, GREEDY.replace(mode="standard", max_tokens=64)).tokens
    result = generate(PROMPTS[1], tiny_pair, GREEDY.replace(num_draft=4, ssd=True, max_tokens=64))
    assert result.tokens == expected and result.stats.predrafted > 0  # the switch's learning rounds pre-draft


def test_adaptive_ssd_keeps_greedy_output_identical(tiny_pair: ModelPair) -> None:
    expected = generate(PROMPTS[1], tiny_pair, GREEDY.replace(mode="standard", max_tokens=64)).tokens
    result = generate(PROMPTS[1], tiny_pair, GREEDY.replace(adaptive=True, ssd=True, max_tokens=64))
    assert result.tokens == expected


def test_one_side_stream_per_thread_however_many_answers(tiny_pair: ModelPair) -> None:
    first = side_stream()
    for _ in range(3):
        generate(PROMPTS[0], tiny_pair, GREEDY.replace(num_draft=2, **ALWAYS, max_tokens=12))
    assert side_stream() == first


@pytest.mark.statistical
def test_ssd_samples_follow_the_target_distribution_end_to_end(tiny_pair: ModelPair) -> None:
    """The second token comes from a pre-drafted draft whenever the first round's correction was guessed, so its
    marginal tests SSD's drafts against the target's exact sum_x1 p(x1) p(x2 | x1).

    600 answers (about 240 on the pre-drafted path): pre-drafted tokens accepted without the verify rule give a
    second-token chi-square of 88 at 16 degrees of freedom (critical 39) at 600, and 46 (critical 33) at only 300,
    so the test catches that with power near 1."""
    # Temperature 0.5 and the widest fan-out: the first round's correction is among the guesses in about 40% of runs.
    params = GenerationParams(drafter="model", temperature=0.5, top_p=1.0, max_tokens=3, num_draft=1, adaptive=False, **ALWAYS, fanout=8)
    prompt_ids = tiny_pair.prompt_ids(PROMPTS[0])
    laws = first_two_token_laws(tiny_pair, prompt_ids, params)
    mx.random.seed(2025)
    results = independent_answers(tiny_pair, prompt_ids, params, 600)
    assert sum(r.stats.ssd_hits for r in results) > len(results) // 5  # the pre-drafted path was taken often enough
    assert_first_two_tokens_follow([r.tokens for r in results], laws, *tiny_pair.tokenizer.eos_token_ids)


@pytest.fixture(scope="module")
def smollm_rounded_pair(smollm: LoadedModel, tmp_path_factory: pytest.TempPathFactory) -> ModelPair:
    """SmolLM2 drafting with itself rounded to 4 bits: related enough for SSD's guesses to come true."""
    from engine.models.loading import load_model
    from tests.real_models import rounded_copy

    draft = load_model(str(rounded_copy(smollm.path, tmp_path_factory.mktemp("ssd-draft") / "rounded", bits=4)))
    return ModelPair(smollm, draft)


@pytest.mark.real_weights
def test_greedy_ssd_is_token_identical_on_smollm2(smollm_rounded_pair: ModelPair) -> None:
    """Real weights, one K and fan-out: the tiny pair's tests sweep the K x fan-out grid."""
    prompt = "Write a Python function that reverses a string."
    # Pre-drafting K x fan-out x 2 tokens a round is slow on a CPU: 16 tokens pre-draft 64 and hit twice (24: 88, 4)
    params = GREEDY.replace(max_tokens=16)
    expected = generate(prompt, smollm_rounded_pair, params.replace(mode="standard")).tokens
    result = generate(prompt, smollm_rounded_pair, params.replace(num_draft=4, **ALWAYS, fanout=2))
    assert result.tokens == expected and result.stats.predrafted > 0 and result.stats.ssd_hits > 0


def test_the_switch_is_kept_with_the_pair_so_later_answers_do_not_learn_again(tiny_pair: ModelPair) -> None:
    params = GREEDY.replace(num_draft=3, ssd=True, max_tokens=40)
    generate(PROMPTS[0], tiny_pair, params)
    (switch,) = [kept for kept in tiny_pair._policies.values() if isinstance(kept, SsdSwitch)]
    assert all(len(rates) >= LEARN_ROUNDS for rates in switch.rates.values())
    measured = switch.measured
    generate(PROMPTS[1], tiny_pair, params)
    assert [kept for kept in tiny_pair._policies.values() if isinstance(kept, SsdSwitch)] == [switch]
    assert switch.measured > measured  # the same switch went on measuring
