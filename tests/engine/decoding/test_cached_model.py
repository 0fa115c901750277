"""CachedModel: a cache that knows its token ids gives prefix reuse, exact rewinds and catch-up."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.decoding.cached_model import (
    EQUAL_COST_CONTEXT,
    EQUAL_COST_HIDDEN_SIZES,
    CachedModel,
    common_prefix_length,
    equal_cost_context,
    prefill_chunk_length,
)
from engine.decoding.pair import ModelPair
from tests.helpers import ScriptedModel, checksum


@pytest.mark.parametrize(
    "a, b, expected",
    [([], [1, 2], 0), ([1, 2, 3], [1, 2, 3], 3), ([1, 2, 3], [1, 2], 2), ([1, 2, 3], [1, 9, 3], 1),
     ([5] * 1000 + [1], [5] * 1000 + [2], 1000), ([7, 1], [8, 1], 0)],
)
def test_common_prefix_length(a: list[int], b: list[int], expected: int) -> None:
    assert common_prefix_length(a, b) == expected


def test_catch_up_prefills_all_but_the_tail_in_chunks() -> None:
    model = ScriptedModel([1], prompt_length=0, vocab_size=10)
    cached = CachedModel(model, prefill_step_size=4)
    context = list(range(10))
    steps = list(cached.catch_up_steps(context))
    assert steps == [(0, 10), (4, 10), (8, 10), (9, 10)]  # said before the first chunk, then after each
    assert model.calls == [4, 4, 1] and cached.tokens == context[:9]


def test_prefill_chunks_shrink_as_the_context_grows_so_each_costs_about_the_first() -> None:
    lengths = [prefill_chunk_length(512, position, 7168) for position in range(0, 200_000, 1000)]
    assert lengths[0] == 512 and lengths == sorted(lengths, reverse=True) and lengths[-1] >= 1
    for position, length in zip(range(0, 200_000, 1000), lengths, strict=True):
        cost = length * (1 + position / 7168)  # tokens times (weights + attention), in first-chunk token units
        assert 512 - 20 <= cost <= 512 + 20
    assert prefill_chunk_length(512, 20_000, 7168) < 512 / 3  # was the whole step: 3.8 first chunks' work
    assert prefill_chunk_length(4, 10**9, 7168) == 1


def test_catch_up_reads_a_long_context_in_shrinking_chunks() -> None:
    model = ScriptedModel([1], prompt_length=0, vocab_size=10)
    cached = CachedModel(model, prefill_step_size=8)
    cached.equal_cost_context = 8  # attention outweighs the weights from 8 cached positions on
    context = list(range(41))
    assert [s[0] for s in cached.catch_up_steps(context)] == [0, 8, 12, 15, 18, 20, 22, 24, 26, 28, 30, 32,
                                                              34, 36, 37, 38, 39, 40]
    assert cached.tokens == context[:40] and sum(model.calls) == 40


def test_the_equal_cost_context_follows_the_hidden_size(tiny_pair: ModelPair) -> None:
    model = tiny_pair.target.model
    assert tiny_pair.target_cache.equal_cost_context == equal_cost_context(model)
    assert equal_cost_context(model) == EQUAL_COST_HIDDEN_SIZES["cpu"] * model.args.hidden_size  # on MLX's CPU backend
    assert equal_cost_context(ScriptedModel([1], prompt_length=0, vocab_size=10)) == EQUAL_COST_CONTEXT


def test_catch_up_reuses_the_shared_prefix_and_trims_the_rest() -> None:
    model = ScriptedModel([1], prompt_length=0, vocab_size=10)
    cached = CachedModel(model)
    cached.catch_up([1, 2, 3, 4, 5, 6])
    model.calls.clear()
    tail = cached.catch_up([1, 2, 3, 9, 9, 9, 9])
    assert tail == [9]
    assert cached.tokens == [1, 2, 3, 9, 9, 9]
    assert cached.cache[0].offset == 6 and model.calls == [3]  # only the differing part was recomputed


def test_catch_up_of_an_already_cached_context_recomputes_the_last_token() -> None:
    cached = CachedModel(ScriptedModel([1], prompt_length=0, vocab_size=10))
    cached.catch_up([1, 2, 3])
    cached.forward(mx.array([3]), ids=[3])
    assert cached.catch_up([1, 2, 3]) == [3] and cached.tokens == [1, 2]


def test_max_tail_leaves_short_gaps_for_one_forward_pass() -> None:
    cached = CachedModel(ScriptedModel([1], prompt_length=0, vocab_size=10))
    cached.catch_up([1, 2, 3])
    assert cached.catch_up([1, 2, 3, 4, 5], max_tail=8) == [3, 4, 5]
    assert cached.catch_up(list(range(1, 20)), max_tail=8) == list(range(12, 20))


def test_attention_caches_rewind_by_dropping_positions() -> None:
    model = ScriptedModel([1], prompt_length=0, vocab_size=10)
    cached = CachedModel(model)
    cached.catch_up([1, 2, 3, 4])
    model.calls.clear()
    assert cached.catch_up([1, 2, 9, 9]) == [9]
    assert cached.tokens == [1, 2, 9] and model.calls == [1] and cached.cache[0].offset == 3
    assert cached.rewinds == {"dropped": 1, "restored": 0, "reset": 0}


def test_a_recurrent_state_without_a_checkpoint_starts_over() -> None:
    model = ScriptedModel([1], prompt_length=0, vocab_size=10, recurrent=True)
    cached = CachedModel(model)
    cached.catch_up([1, 2, 3, 4])
    model.calls.clear()
    cached.catch_up([1, 2, 9, 9])
    assert cached.tokens == [1, 2, 9] and model.calls == [3]
    assert cached.rewinds["reset"] == 1 and int(cached.cache[1][0].item()) == checksum([1, 2, 9])


def test_a_recurrent_state_returns_to_its_checkpoint_and_the_rest_is_fed_again() -> None:
    model = ScriptedModel([1], prompt_length=0, vocab_size=10, recurrent=True)
    cached = CachedModel(model)
    cached.catch_up([1, 2, 3])  # holds [1, 2]
    cached.checkpoint_round()
    cached.forward(mx.array([3, 4, 5]), ids=[3, 4, 5])  # a verify pass; only 3 and 4 are accepted
    model.calls.clear()
    tail = cached.catch_up([1, 2, 3, 4, 9], max_tail=8)
    assert cached.rewinds["restored"] == 1 and cached.tokens == [1, 2] and tail == [3, 4, 9]
    assert int(cached.cache[1][0].item()) == checksum([1, 2]) and cached.cache[0].offset == 2 and model.calls == []
    cached.forward(mx.array(tail), ids=tail)
    assert int(cached.cache[1][0].item()) == checksum([1, 2, 3, 4, 9])


def test_pending_inputs_are_recorded_once_resolved_or_discarded() -> None:
    cached = CachedModel(ScriptedModel([1], prompt_length=0, vocab_size=10))
    cached.catch_up([1, 2])
    cached.forward(mx.array([2]), ids=[2])
    cached.forward(mx.array([7]))
    with pytest.raises(AssertionError):
        cached.catch_up([1, 2, 7])
    cached.resolve([7])
    assert cached.tokens == [1, 2, 7]
    cached.forward(mx.array([8]))
    cached.discard_pending()
    assert cached.tokens == [] and cached.cache[0].offset == 0


def test_rewound_logits_equal_a_fresh_computation(tiny_target) -> None:
    """After drafting past a point and rewinding, the next logits are those of a clean pass."""
    context = tiny_target.tokenizer.encode("The capital of France is Paris, and")
    fresh = CachedModel(tiny_target.model)
    expected = fresh.forward(mx.array(context), ids=context)[-1]

    cached = CachedModel(tiny_target.model)
    cached.catch_up(context)
    cached.forward(mx.array(context[-1:] + [5, 6, 7]), ids=context[-1:] + [5, 6, 7])  # a rejected draft
    tail = cached.catch_up(context)
    got = cached.forward(mx.array(tail), ids=tail)[-1]
    np.testing.assert_allclose(np.array(got), np.array(expected), rtol=1e-4, atol=1e-4)
