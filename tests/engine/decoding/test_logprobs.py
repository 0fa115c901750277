"""Log-probabilities of emitted tokens are the target's, whoever drafted them, and cost no read of their own."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.decoding.cached_model import CachedModel
from engine.decoding.generation import generate_stream
from engine.decoding.logprobs import package, unpack
from engine.decoding.pair import ModelPair
from engine.events import TokenEvent
from engine.params import GenerationParams

PROMPT = "Repeat this: the cat sat on the mat, the cat sat on the mat, the cat sat on the"
TOP = 3


def target_logprobs(pair: ModelPair, context: list[int]) -> np.ndarray:
    """(len(context), V) log-softmax of the target's logits over `context`, from one plain forward pass."""
    logits = CachedModel(pair.target.model).forward(mx.array(context, dtype=mx.uint32), ids=list(context))
    x = np.array(logits.astype(mx.float32), dtype=np.float64)
    return x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) - x.max(-1, keepdims=True)


def check_against_a_plain_pass(pair: ModelPair, params: GenerationParams, tolerance: float = 2e-4) -> list[TokenEvent]:
    """Every emitted token's logprob and top alternatives equal a plain target pass's (float32 tolerance)."""
    tokens = [e for e in generate_stream(pair, PROMPT, params) if isinstance(e, TokenEvent)]
    prompt = pair.prompt_ids(PROMPT)
    expected = target_logprobs(pair, prompt + [t.token for t in tokens])
    for i, event in enumerate(tokens):
        row = expected[len(prompt) - 1 + i]
        assert event.logprob is not None and event.logprob.token == event.token
        assert event.logprob.logprob == pytest.approx(row[event.token], abs=tolerance)
        best = np.argsort(-row)[:TOP]
        assert [token for token, _ in event.logprob.top] == list(best)
        assert [lp for _, lp in event.logprob.top] == pytest.approx(list(row[best]), abs=tolerance)
    return tokens


@pytest.mark.parametrize("temperature", [0.0, 0.8])
@pytest.mark.parametrize("mode, drafter", [("standard", "model"), ("speculative", "model"), ("speculative", "lookup")])
def test_logprobs_are_the_targets_in_every_mode(tiny_pair: ModelPair, mode: str, drafter: str, temperature: float) -> None:
    params = GenerationParams(mode=mode, drafter=drafter, temperature=temperature, top_p=1.0, max_tokens=40, num_draft=4,
                              adaptive=False, seed=4, logprobs=TOP)
    tokens = check_against_a_plain_pass(tiny_pair, params)
    if mode == "speculative" and (drafter == "model" or temperature == 0):  # accepted draft tokens: from the verify pass
        assert any(t.origin == "accepted" for t in tokens)


def test_without_logprobs_tokens_carry_none(tiny_pair: ModelPair) -> None:
    params = GenerationParams(drafter="model", temperature=0.0, max_tokens=8)
    assert all(e.logprob is None for e in generate_stream(tiny_pair, PROMPT, params) if isinstance(e, TokenEvent))


def test_no_alternatives_gives_the_chosen_tokens_logprob_alone(tiny_pair: ModelPair) -> None:
    params = GenerationParams(drafter="model", temperature=0.0, max_tokens=8, logprobs=0)
    events = [e for e in generate_stream(tiny_pair, PROMPT, params) if isinstance(e, TokenEvent)]
    assert events and all(e.logprob.top == () and e.logprob.logprob <= 0 for e in events)


def test_a_package_unpacks_into_the_rows_tokens() -> None:
    logits = mx.array([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]])
    values = package(logits, mx.array([2, 0]), 2).tolist()
    first, second = unpack(values, [2, 0], 2)
    assert first.token == 2 and first.logprob == pytest.approx(1.0 - np.log(1 + np.e + np.e**2), abs=1e-6)
    assert [t for t, _ in first.top] == [1, 2] and [t for t, _ in second.top] == [0, 1]


def test_a_draft_model_round_with_logprobs_still_reads_the_device_once(tiny_pair: ModelPair, monkeypatch) -> None:
    """The logprobs ride on the round's one read of the verdict."""
    from engine.decoding.drafting.draft_model import DraftModelDrafter
    from engine.decoding.policy.draft_length import FixedDraftLength
    from engine.decoding.sampling import Warper
    from engine.decoding.speculative import SpeculativeDecoder

    params = GenerationParams(drafter="model", temperature=0.7, seed=3)
    warper = Warper(params, tiny_pair.vocab_width)
    context = tiny_pair.prompt_ids("Hello")
    tiny_pair.target_cache.catch_up(context)
    tiny_pair.draft_cache.catch_up(context)
    drafter = DraftModelDrafter(tiny_pair.draft_cache, warper, FixedDraftLength(6))
    drafter._drafted_rounds = 99  # not a timed round
    decoder = SpeculativeDecoder(tiny_pair.target_cache, warper, FixedDraftLength(6), [drafter], logprobs=TOP)
    decoder.start(context)
    reads = []
    for name in ("item", "tolist"):
        real = getattr(mx.array, name)
        monkeypatch.setattr(mx.array, name, lambda self, real=real, name=name: reads.append(name) or real(self))
    result = decoder.round(context, 20)
    assert reads == ["tolist"]
    assert [lp.token for lp in result.logprobs] == result.tokens and all(len(lp.top) == TOP for lp in result.logprobs)


@pytest.mark.real_weights
def test_logprobs_are_the_targets_on_real_weights(smollm) -> None:
    pair = ModelPair(smollm, smollm)  # drafting with itself: every draft accepted, every logprob from a verify pass
    for temperature in (0.0, 0.8):
        params = GenerationParams(temperature=temperature, top_p=1.0, max_tokens=16, num_draft=4, adaptive=False, seed=2,
                                  drafter="model+lookup", logprobs=TOP)
        # Quantized matmuls run another kernel for one token than for many: passes of different widths over
        # the same tokens differ by up to about 3e-4 in SmolLM2's logits, whoever reads them.
        check_against_a_plain_pass(pair, params, tolerance=2e-3)
