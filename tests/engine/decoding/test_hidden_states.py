"""The verify pass hands drafters the target's hidden states without a second pass, on dense and hybrid targets."""

from __future__ import annotations

import mlx.core as mx
import pytest
from mlx_lm.models.cache import make_prompt_cache

from engine.decoding.cached_model import CachedModel
from engine.decoding.hidden_states import (
    LAST_POST_NORM,
    LAST_PRE_NORM,
    LayerTap,
    decoder_layers,
    final_norm,
    forward_with_taps,
)
from engine.drafters.mtp import SharedParts
from engine.errors import UnsupportedModelError

IDS = mx.array([[1, 2, 3, 4, 5, 6, 7, 1, 2]])


@pytest.fixture(params=["hybrid", "dense", "llama"])
def target(request: pytest.FixtureRequest, mtp_target, tiny_target):
    """A Qwen3.5 hybrid (GatedDeltaNet), a MiMo and a Llama: three mlx-lm model classes."""
    return tiny_target.model if request.param == "llama" else mtp_target(request.param).model


def test_the_tapped_pass_returns_the_plain_pass_s_logits_and_the_states_that_produce_them(target) -> None:
    layers = decoder_layers(target)
    taps = [LAST_PRE_NORM, LAST_POST_NORM, LayerTap(0, "input"), LayerTap(0), LayerTap(1, "input"), LayerTap(-1, "input")]
    logits, (pre, post, in0, out0, in1, in_last) = forward_with_taps(target, IDS, make_prompt_cache(target), taps)
    plain = target(IDS, cache=make_prompt_cache(target))
    assert mx.array_equal(logits, plain)
    assert mx.allclose(SharedParts(target).logits(post), logits, atol=1e-5)  # post-norm is what the LM head reads
    assert mx.allclose(final_norm(target)(pre), post, atol=1e-6)
    assert mx.array_equal(in0, SharedParts(target).embed(IDS))  # layer 0 reads the embeddings
    assert mx.array_equal(out0, in1)  # a layer's output is the next one's input
    assert not mx.allclose(in_last, pre)  # the last layer did add something
    assert pre.shape[:2] == IDS.shape
    assert not any(type(layer).__name__.startswith("Recording") for layer in layers)


def test_a_tapped_pass_with_a_cache_continues_as_the_plain_one_does(mtp_target) -> None:
    """On a hybrid target the recurrent state the tapped pass leaves behind is the plain pass's."""
    model = mtp_target("hybrid").model
    tapped, plain = model.make_cache(), model.make_cache()
    forward_with_taps(model, IDS, tapped, [LAST_POST_NORM])
    model(IDS, cache=plain)
    step = mx.array([[3]])
    assert mx.array_equal(forward_with_taps(model, step, tapped, [LAST_POST_NORM])[0], model(step, cache=plain))


def test_the_model_is_left_as_it_was_even_when_the_pass_fails(tiny_target) -> None:
    model = tiny_target.model
    classes = [type(layer) for layer in decoder_layers(model)] + [type(final_norm(model))]
    with pytest.raises(Exception):  # noqa: B017 - whatever the failed pass raises, the model must come back whole
        forward_with_taps(model, mx.array([[1.5]]), "not a cache", [LayerTap(0), LAST_POST_NORM])
    assert [type(layer) for layer in decoder_layers(model)] + [type(final_norm(model))] == classes


def test_a_tap_beyond_the_target_s_layers_is_refused_in_one_line(tiny_target) -> None:
    with pytest.raises(UnsupportedModelError, match="layer 9 of a target with 2 layers"):
        forward_with_taps(tiny_target.model, IDS, None, [LayerTap(9)])


class _Recorder:
    """A listener that writes down what it hears."""

    taps = (LAST_POST_NORM,)
    state: list = []

    def __init__(self) -> None:
        self.heard_at: list[tuple[int, int]] = []

    def heard(self, position: int, states: list[mx.array]) -> None:
        self.heard_at.append((position, states[0].shape[0]))


def test_a_listening_cache_hands_over_every_pass_with_its_position(mtp_target) -> None:
    cached = CachedModel(mtp_target("hybrid").model, prefill_step_size=4)
    cached.listener = listener = _Recorder()
    context = [1, 2, 3, 4, 5, 6, 7, 1, 2, 3]
    tail = cached.catch_up(context)  # prefill in chunks of 4, leaving the last token
    cached.checkpoint_round()
    cached.forward(mx.array(tail + [4, 5], dtype=mx.uint32))  # a verify pass over the tail and a draft
    assert listener.heard_at == [(0, 4), (4, 4), (8, 1), (9, 3)]
    cached.resolve(tail + [4, 5])
    tail = cached.catch_up(context + [6])  # the draft rejected: back to the checkpoint, the tail fed again
    cached.forward(mx.array(tail, dtype=mx.uint32), ids=tail)
    assert listener.heard_at[4:] == [(9, 1), (10, 1)]
    assert cached.rewinds["restored"] == 1 and cached.passes == 6
