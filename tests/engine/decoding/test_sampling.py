"""The warp gives the distribution mlx-lm's sampler draws from, for draft and target alike."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.sample_utils import make_logits_processors, make_sampler

from engine.decoding.sampling import Warper
from engine.params import GenerationParams

LOGITS = mx.array([[2.0, 1.5, 0.3, -1.0, 0.9, 0.0, -2.0, 1.1]])


def probs(params: GenerationParams, logits: mx.array = LOGITS) -> np.ndarray:
    return np.exp(np.array(Warper(params, logits.shape[-1]).logprobs(logits)[0]))


@pytest.mark.parametrize(
    "settings",
    [dict(temperature=1.0, top_p=1.0), dict(temperature=0.7, top_p=0.8), dict(temperature=1.3, top_k=3),
     dict(temperature=0.9, min_p=0.2), dict(temperature=0.6, top_p=0.9, top_k=5, min_p=0.05)],
)
def test_samples_match_mlx_lm_sampler_draw_for_draw(settings: dict) -> None:
    """Same seed, same draws: our warped distribution is the one mlx-lm's sampler samples from."""
    params = GenerationParams(**{"top_p": 1.0, **settings})
    sampler = make_sampler(params.temperature, params.top_p, params.min_p, top_k=params.top_k)
    logprobs = LOGITS - mx.logsumexp(LOGITS, axis=-1, keepdims=True)
    warper = Warper(params, LOGITS.shape[-1])
    for seed in range(200):
        mx.random.seed(seed)
        theirs = sampler(logprobs).item()
        mx.random.seed(seed)
        ours = warper.choose(LOGITS, position=0)[0].item()
        assert ours == theirs, seed


def test_filters_keep_what_they_should() -> None:
    assert np.count_nonzero(probs(GenerationParams(temperature=1.0, top_p=1.0, top_k=3))) == 3
    kept = probs(GenerationParams(temperature=1.0, top_p=0.5))
    full = probs(GenerationParams(temperature=1.0, top_p=1.0))
    assert full[kept > 0].sum() >= 0.5 and np.count_nonzero(kept) < 8
    assert np.isclose(probs(GenerationParams(temperature=1.0, top_p=1.0)).sum(), 1.0)


def test_temperature_sharpens_and_flattens() -> None:
    cold = probs(GenerationParams(temperature=0.3, top_p=1.0))
    hot = probs(GenerationParams(temperature=2.0, top_p=1.0))
    assert cold.max() > probs(GenerationParams(temperature=1.0, top_p=1.0)).max() > hot.max()


def test_greedy_chooses_the_argmax_without_a_distribution() -> None:
    token, logprobs = Warper(GenerationParams(temperature=0.0), 8).choose(LOGITS, position=0)
    assert token.item() == 0 and logprobs is None


ADJUSTMENTS = {
    "repetition": {"repetition_penalty": 1.5},
    "presence": {"presence_penalty": 0.7},
    "frequency": {"frequency_penalty": 0.4},
    "bias": {"logit_bias": {3: 2.0, 6: -5.0}},
    "all": {"repetition_penalty": 1.2, "presence_penalty": 0.5, "frequency_penalty": -0.3, "logit_bias": {1: 1.0}},
}


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_adjusted_rows_see_the_draft_tokens_before_them(adjustment: str) -> None:
    """Row i of a verify pass is adjusted as standard decoding would be (mlx-lm's processors, in its order), with
    drafts 0..i-1 in its history; the drafts repeat a token, so a frequency penalty counts it twice."""
    settings = ADJUSTMENTS[adjustment]
    warper = Warper(GenerationParams(temperature=0.0, repetition_context_size=4, **settings), 8)
    assert warper.adjusts_logits
    logits = mx.broadcast_to(LOGITS, (4, 8))
    history, drafts = mx.array([0, 1]), mx.array([4, 4, 7])
    got = np.array(warper.adjust_logits(logits, history, drafts))
    window = {"repetition_context_size": 4, "presence_context_size": 4, "frequency_context_size": 4}
    processors = make_logits_processors(**settings, **window)
    for i, seen in enumerate([[0, 1], [0, 1, 4], [0, 1, 4, 4], [1, 4, 4, 7]]):
        expected = mx.array(LOGITS)
        for processor in processors:
            expected = processor(mx.array(seen), expected)
        np.testing.assert_allclose(got[i], np.array(expected)[0], rtol=1e-6)


def test_without_penalties_or_bias_logits_pass_unadjusted() -> None:
    warper = Warper(GenerationParams(temperature=0.0), 8)
    assert not warper.adjusts_logits and warper.adjust_logits(LOGITS, mx.array([0]), None) is LOGITS


def test_a_logit_bias_on_a_token_the_model_does_not_have_is_refused() -> None:
    from engine.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="logit_bias names token 8, which this model does not have: its ids run from 0 to 7"):
        Warper(GenerationParams(logit_bias={8: 1.0}), 8)


def test_fit_width_brings_a_padded_or_short_vocabulary_to_the_target_width() -> None:
    warper = Warper(GenerationParams(temperature=1.0), 6)
    wide = warper.fit_width(mx.zeros((2, 9)))
    narrow = warper.fit_width(mx.zeros((2, 4)))
    assert wide.shape == (2, 6) and narrow.shape == (2, 6)
    assert np.isneginf(np.array(narrow)[:, 4:]).all()
    assert np.exp(np.array(warper.logprobs(narrow)))[:, 4:].sum() == 0.0


@pytest.mark.statistical
def test_seeded_draws_follow_the_warped_distribution() -> None:
    """A seeded draw is argmax(logp + Gumbel noise of its position): over many seeds, exactly p."""
    from tests.helpers import chi_square, chi_square_critical

    params = GenerationParams(temperature=0.9, top_p=0.95)
    expected = probs(params)
    n = 4000
    counts: dict[int, int] = {}
    for seed in range(n):
        token = Warper(params.replace(seed=seed), 8).choose(LOGITS, position=3)[0].item()
        counts[token] = counts.get(token, 0) + 1
    stat, df = chi_square(counts, dict(enumerate(expected)), n)
    assert stat < chi_square_critical(df), (stat, df)


def test_seeded_draws_depend_on_the_seed_and_the_position_only() -> None:
    warper = Warper(GenerationParams(temperature=1.0, top_p=1.0, seed=5), 8)
    rows = mx.concatenate([LOGITS] * 6)
    together = warper.choose(rows, position=10)[0].tolist()
    one_by_one = [warper.choose(LOGITS, position=10 + i)[0].item() for i in range(6)]
    again = Warper(GenerationParams(temperature=1.0, top_p=1.0, seed=5), 8).choose(rows, position=10)[0].tolist()
    assert together == one_by_one == again
    assert len(set(together)) > 1  # positions differ in their noise
    lenient = Warper(GenerationParams(temperature=1.0, seed=5, lenience=0.3), 8)
    assert not lenient.coupled and Warper(GenerationParams(temperature=0.0, seed=5), 8).seed is None
