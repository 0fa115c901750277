"""The cache rule on every layer type: sliding windows that drop exactly past their window, recurrent state that
returns to snapshots, quantized keys and values, and a rewind beyond what dropping can reach."""

from __future__ import annotations

import mlx.core as mx
import pytest
from mlx_lm.models.cache import ArraysCache, KVCache, QuantizedKVCache, RotatingKVCache, make_prompt_cache

from engine.decoding.cached_model import CachedModel
from engine.decoding.caches import WINDOW_SLACK, WindowKVCache, make_cache
from engine.fixtures.tiny_families import WINDOW

SLIDING = ("llama-sliding", "gemma3_text", "gpt_oss")
HYBRID = ("qwen3_next", "nemotron_h")


def next_logits(cached: CachedModel, context: list[int]) -> mx.array:
    """The logits after `context`, through the cache's own catch-up."""
    tail = cached.catch_up(context)
    return cached.forward(mx.array(tail, dtype=mx.uint32), ids=tail)[-1]


def fresh_logits(model, context: list[int]) -> mx.array:
    return next_logits(CachedModel(model), context)


def assert_close(a: mx.array, b: mx.array) -> None:
    assert mx.allclose(a, b, atol=1e-4).item(), float(mx.abs(a - b).max())


@pytest.mark.parametrize("family", SLIDING)
def test_window_layers_attend_as_mlx_lm_rotating_caches_do(family: str, family_models) -> None:
    """Chunks and single tokens past the window: our WindowKVCache gives mlx-lm's RotatingKVCache's logits."""
    model = family_models(family)[0].model
    ours, theirs = make_cache(model), make_prompt_cache(model)
    assert {type(c) for c in ours} >= {WindowKVCache} and {type(c) for c in theirs} >= {RotatingKVCache}
    tokens = list(range(7, 7 + 3 * WINDOW))
    for chunk in (tokens[:20], tokens[20:21], tokens[21:33], *([t] for t in tokens[33:])):
        inputs = mx.array(chunk, dtype=mx.uint32)[None]
        assert_close(model(inputs, cache=ours), model(inputs, cache=theirs))


@pytest.mark.parametrize("family", SLIDING)
def test_dropping_within_the_slack_is_exact_past_the_window(family: str, family_models) -> None:
    model = family_models(family)[0].model
    cached = CachedModel(model)
    context = list(range(7, 7 + 4 * WINDOW))
    next_logits(cached, context + list(range(100, 140)))  # 40 tokens a rejection takes back
    assert_close(next_logits(cached, context + [200, 201]), fresh_logits(model, context + [200, 201]))
    assert cached.rewinds == {"dropped": 1, "restored": 0, "reset": 0}


@pytest.mark.parametrize("family", SLIDING + HYBRID)
def test_a_rewind_beyond_dropping_returns_to_the_turn_checkpoint(family: str, family_models) -> None:
    """A Regenerate after an answer longer than the window's slack, or on a model with recurrent state: back to
    the checkpoint taken when the turn's prompt was in, then only the new tokens are fed."""
    model = family_models(family)[0].model
    cached = CachedModel(model)
    prompt = list(range(7, 7 + 2 * WINDOW))
    cached.catch_up(prompt)
    cached.checkpoint_turn()
    answer = list(range(100, 100 + WINDOW_SLACK + 20))
    next_logits(cached, prompt + answer)
    regenerated = prompt + [300, 301, 302]
    assert_close(next_logits(cached, regenerated), fresh_logits(model, regenerated))
    assert cached.rewinds == {"dropped": 0, "restored": 1, "reset": 0}


def test_kv_bits_quantize_full_attention_layers_only(family_models) -> None:
    model = family_models("llama-sliding")[0].model
    kinds = [type(c) for c in make_cache(model, kv_bits=8)]
    assert kinds == [WindowKVCache, QuantizedKVCache, WindowKVCache, QuantizedKVCache]
    assert all(c.bits == 8 for c in make_cache(model, kv_bits=8) if isinstance(c, QuantizedKVCache))
    hybrid = family_models("qwen3_next")[0].model
    assert [type(c) for c in make_cache(hybrid, kv_bits=4)] == [ArraysCache, QuantizedKVCache, ArraysCache, QuantizedKVCache]
    assert [type(c) for c in make_cache(hybrid)] == [ArraysCache, KVCache, ArraysCache, KVCache]


def test_a_window_cache_knows_how_far_it_can_drop() -> None:
    cache = WindowKVCache(window=4, slack=3)
    for _ in range(20):
        cache.update_and_fetch(mx.zeros((1, 1, 1, 2)), mx.zeros((1, 1, 1, 2)))
    assert cache.held == 4 - 1 + 3 and cache.offset == 20
    assert cache.can_drop(3) and not cache.can_drop(4)  # the next query must still find its 3 predecessors
    cache.trim(3)
    assert cache.offset == 17 and cache.held == 3 and not cache.can_drop(1)


def test_keys_that_cannot_be_quantized_stay_in_full_precision(tiny_target, family_models) -> None:
    assert [type(c) for c in make_cache(tiny_target.model, kv_bits=4)] == [KVCache, KVCache]  # heads of 16
    gpt_oss = family_models("gpt_oss")[0].model  # attention sinks: MLX's quantized attention has none
    assert QuantizedKVCache not in {type(c) for c in make_cache(gpt_oss, kv_bits=8)}
