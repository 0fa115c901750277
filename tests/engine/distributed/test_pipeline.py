"""Stages of any full-attention model, checked in one process: the first stage's sends, fed to the last stage's
receive, give the whole model's logits, pass after pass (prefill, then a decoding step on the caches)."""

from __future__ import annotations

import mlx.core as mx
import pytest
from mlx_lm.models.cache import make_prompt_cache

from engine.distributed.pipeline import cut, layer_owner, stages
from engine.errors import UnsupportedModelError
from engine.fixtures.tiny_families import build_family
from engine.models.loading import load_model


class Relay:
    """Both ends of the ring in one process: what one stage sends, the next receives."""

    def __init__(self) -> None:
        self.sent: list[mx.array] = []

    def send(self, x: mx.array, dst: int) -> mx.array:
        self.sent.append(x)
        return x

    def recv_like(self, x: mx.array, src: int) -> mx.array:
        received = self.sent.pop(0)
        assert received.shape == x.shape and received.dtype == x.dtype
        return received


def test_stages_follow_mlx_lm_rank_0_runs_the_last_layers() -> None:
    head, middle, first = stages([1, 1, 2])
    assert (head.start, head.end, head.last, head.first) == (3, 4, True, False)
    assert (middle.start, middle.end) == (2, 3)
    assert (first.start, first.end, first.first) == (0, 2, True)


@pytest.mark.parametrize("family, split", [("llama", [1, 2, 1]), ("qwen2", [3, 1]), ("qwen3", [1, 1])])
def test_stages_chained_give_the_whole_models_logits(tmp_path_factory, family: str, split: list[int]) -> None:
    target, _ = build_family(tmp_path_factory.mktemp(family), family)
    whole = load_model(str(target)).model
    relay = Relay()
    parts = []
    for stage in reversed(stages(split)):  # the first stage first, as the activations flow
        model = load_model(str(target)).model
        cut(model, stage, relay)  # type: ignore[arg-type]  # a recording stand-in for the ring
        assert len(layer_owner(model)["layers"]) == split[stage.rank]
        parts.append((model, make_prompt_cache(model)))
    whole_cache = make_prompt_cache(whole)
    for ids in ([3, 14, 15, 92, 65], [35]):  # a prompt, then one decoding step after it
        inputs = mx.array(ids)[None]
        expected = whole(inputs, cache=whole_cache)
        for model, cache in parts:
            logits = model(inputs, cache=cache)
        assert mx.allclose(logits, expected, atol=1e-5).item()
    assert not relay.sent


def test_a_wrapped_layer_still_shows_its_attributes(tmp_path_factory) -> None:
    target, _ = build_family(tmp_path_factory.mktemp("llama"), "llama")
    model = load_model(str(target)).model
    cut(model, stages([2, 2])[0], Relay())  # type: ignore[arg-type]  # a recording stand-in for the ring
    first = layer_owner(model)["layers"][0]
    assert first.use_sliding is False and first.self_attn is not None  # what llama's make_cache reads
    assert len(model.make_cache()) == 2


@pytest.mark.parametrize("family", ["llama-sliding", "gemma3_text", "qwen3_next"])
def test_a_model_with_layers_of_several_kinds_is_refused_in_one_line(tmp_path_factory, family: str) -> None:
    from engine.distributed.shard import build_lazily

    target, _ = build_family(tmp_path_factory.mktemp(family), family)
    with pytest.raises(UnsupportedModelError, match="has layers of several kinds .* cannot split across Macs yet"):
        build_lazily(str(target))
