"""Speculation is exact on every cache family: dense, sliding-window, mixture of experts and hybrid models.

For each family (engine/fixtures/tiny_families.py, windows of 16 tokens), greedy speculation with a draft model
at K = 1 and 5 (test_speculative.py sweeps K on the tiny Llama), with prompt lookup and with the adaptive policy emits exactly what standard greedy decoding emits,
for prompts shorter and longer than the window; a second turn and a Regenerate on a used pair answer as a fresh
pair does; and a draft equal to the target is always accepted at temperature 1.
"""

from __future__ import annotations

import pytest

from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.fixtures.tiny_families import FAMILIES, WINDOW
from engine.params import GenerationParams

GREEDY = GenerationParams(drafter="model", temperature=0.0, top_p=1.0, max_tokens=40)
SHORT = "Hi"
LONG = "Tell me about speculative decoding and sliding windows in some detail, please, with examples."
HYBRIDS = {"qwen3_next", "nemotron_h"}


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_speculation_is_token_identical_to_standard(family: str, family_models) -> None:
    """Fixed K = 1 (a round of one draft) and 5 (rollbacks 1 to 5 deep), then the other drafters, on a prompt
    inside the sliding window and one beyond it. What differs by family is the rollback: a trim within the window
    caches' slack of 72 positions or a return to a recurrent checkpoint, the same code at any depth up to 8, so
    K = 2 and 8 (which ran here before, about 40% of the test's CPU time) took no other path: the drafts here
    are right one time in 8 to 30, so longer drafts only roll back deeper. test_speculative.py sweeps K = 1, 2, 5, 8
    on the tiny Llama. A family without a window takes one path whatever the prompt's length: it runs the long
    prompt only (the short one cost 9 CPU s more)."""
    target, draft = family_models(family)
    for prompt in (SHORT, LONG) if "sliding_window" in FAMILIES[family] else (LONG,):
        expected = generate(prompt, ModelPair(target), GREEDY.replace(mode="standard")).tokens
        pair = ModelPair(target, draft)
        for k in (1, 5):
            result = generate(prompt, pair, GREEDY.replace(num_draft=k, adaptive=False))
            assert result.tokens == expected, (family, prompt, k)
            assert result.stats.drafted > 0
        for drafter in ("lookup", "model+lookup", "model"):
            assert generate(prompt, pair, GREEDY.replace(drafter=drafter)).tokens == expected, (family, prompt, drafter)
        # Rejections and the next generation of the same prompt never start over; recurrent state returns to
        # checkpoints, attention (sliding windows within their slack included) drops positions.
        assert pair.target_cache.rewinds["reset"] == 0 and pair.draft_cache.rewinds["reset"] == 0
        assert (pair.target_cache.rewinds["restored"] > 0) == (family in HYBRIDS)
    assert len(pair.prompt_ids(SHORT)) < WINDOW < len(pair.prompt_ids(LONG))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_second_turn_and_a_regenerate_answer_as_a_fresh_pair_does(family: str, family_models) -> None:
    """Answers of up to 40 tokens (60 before, a third more time): the first turn's prompt is past the 16-token
    window already, and a whole answer past it still runs 24 positions beyond a window."""
    target, draft = family_models(family)
    used = ModelPair(target, draft)
    params = GREEDY.replace(num_draft=3, adaptive=False)
    first_turn = [{"role": "user", "content": LONG}]
    reply = generate(first_turn, used, params)
    conversation = first_turn + [{"role": "assistant", "content": reply.text}, {"role": "user", "content": "And then?"}]
    second_turn = used.prompt_ids(conversation)  # the first answer as the ids generated for it
    second = generate(second_turn, used, params)
    assert second.stats.cached_prompt_tokens > len(reply.tokens)  # the first turn was not processed again
    assert second.tokens == generate(second_turn, ModelPair(target, draft), params).tokens
    again = generate(second_turn, used, params)  # Regenerate: the same turn after a whole answer past the window
    assert again.tokens == second.tokens
    assert again.stats.cached_prompt_tokens == len(second_turn) - 1
    assert used.target_cache.rewinds["reset"] == 0  # dropped, or back to the turn's checkpoint: no new prefill


@pytest.mark.parametrize("family", FAMILIES)
def test_a_draft_equal_to_the_target_is_always_accepted_at_temperature_1(family: str, family_models) -> None:
    target, _ = family_models(family)
    pair = ModelPair(target, target)
    drafted = accepted = 0
    for seed in range(20):  # random answers may end early at EOS: gather enough drafts over several
        params = GenerationParams(drafter="model", temperature=1.0, top_p=1.0, max_tokens=40, num_draft=4, adaptive=False, seed=seed)
        stats = generate(LONG, pair, params).stats
        drafted, accepted = drafted + stats.drafted, accepted + stats.accepted
        if drafted >= 40:
            break
    assert drafted >= 40 and accepted == drafted


def test_sliding_window_answers_repeat_and_match_speculation(family_models) -> None:
    """The case found in review: a sliding-window Llama, a prompt longer than the window. Standard decoding
    twice on one pair gave different tokens from the second token on, and lookup speculation diverged, because
    a rotating cache past its window cannot trim and its rewinds kept stale entries."""
    target, _ = family_models("llama-sliding")
    pair = ModelPair(target)
    prompt_ids = list(range(5, 46))  # 41 tokens, window 16
    first = generate(prompt_ids, pair, GREEDY.replace(mode="standard")).tokens
    assert generate(prompt_ids, pair, GREEDY.replace(mode="standard")).tokens == first
    assert generate(prompt_ids, pair, GREEDY.replace(drafter="lookup")).tokens == first


@pytest.mark.parametrize("family", ["llama-sliding", "gemma3_text", "qwen3_next"])
def test_quantized_kv_caches_keep_speculation_exact_on_windows_and_hybrids(family: str, family_models) -> None:
    target, draft = family_models(family)
    params = GREEDY.replace(kv_bits=8)
    expected = generate(LONG, ModelPair(target), params.replace(mode="standard")).tokens
    pair = ModelPair(target, draft)
    for drafter in ("model", "lookup"):
        assert generate(LONG, pair, params.replace(drafter=drafter, num_draft=4, adaptive=False)).tokens == expected
