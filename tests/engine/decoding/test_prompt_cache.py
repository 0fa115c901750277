"""The prompt cache with several entries: alternating prompts hit, exactly, within the memory budget."""

from __future__ import annotations

import random

import pytest

from engine.decoding.cached_model import prefill_chunk_length
from engine.decoding.generation import generate, generate_stream
from engine.decoding.image_prefill import image_prompt, with_images
from engine.decoding.pair import ModelPair
from engine.decoding.prompt_cache import SHELVE_AFTER
from engine.decoding.prompt_cache_disk import DiskCache
from engine.events import GenerationResult, PrefillEvent
from engine.params import GenerationParams

GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=24, adaptive=False, num_draft=3)
DRAFTERS = {"draft model": GREEDY, "lookup": GREEDY.replace(drafter="lookup")}


def _prompt(seed: int, length: int = 200) -> list[int]:
    """A prompt of token ids: an agent's long opening (system prompt and tools) of its own."""
    rng = random.Random(seed)
    return [rng.randrange(10, 300) for _ in range(length)]


A, B, C = _prompt(1), _prompt(2), _prompt(3)
TURN = _prompt(4, 12)


def _answer(pair: ModelPair, prompt: list[int], params: GenerationParams) -> tuple[list[int], int]:
    result = generate(prompt, pair, params)
    return result.tokens, result.stats.cached_prompt_tokens


@pytest.mark.parametrize("drafter", DRAFTERS)
def test_alternating_prompts_hit_on_the_third_request_with_the_output_of_a_fresh_read(tiny_target, tiny_draft,
                                                                                      drafter: str) -> None:
    params = DRAFTERS[drafter]
    expected, cached = _answer(ModelPair(tiny_target, tiny_draft), A + TURN, params)
    assert cached == 0
    pair = ModelPair(tiny_target, tiny_draft)
    _answer(pair, A, params)
    _answer(pair, B, params)
    tokens, cached = _answer(pair, A + TURN, params)
    assert cached >= len(A) and tokens == expected
    models = 2 if drafter == "draft model" else 1  # the draft model's cache is shelved and recalled as well
    assert pair.prompt_cache.hits == models and pair.draft_cache.tokens[: len(A)] == (A if models == 2 else [])[: len(A)]


def test_with_no_budget_one_prefix_thrashes_as_before(tiny_pair: ModelPair) -> None:
    tiny_pair.prompt_cache.budget_bytes = 0
    for prompt in (A, B):
        _answer(tiny_pair, prompt, GREEDY)
    assert _answer(tiny_pair, A + TURN, GREEDY)[1] < len(A) // 10 and len(tiny_pair.prompt_cache) == 0


def test_the_entry_shelved_longest_ago_goes_first_within_the_memory_budget(tiny_target) -> None:
    pair = ModelPair(tiny_target)
    params = GREEDY.replace(mode="standard")
    _answer(pair, A, params)
    _answer(pair, B, params)
    one_entry = pair.prompt_cache.nbytes  # A, shelved when B came
    assert len(pair.prompt_cache) == 1 and one_entry > 0
    pair.prompt_cache.budget_bytes = one_entry * 3 // 2  # room for one entry of this size, not two
    _answer(pair, C, params)  # shelves B: A goes
    assert len(pair.prompt_cache) == 1 and pair.prompt_cache.nbytes <= pair.prompt_cache.budget_bytes
    assert _answer(pair, B + TURN, params)[1] >= len(B)  # kept: recalled
    assert _answer(pair, A + TURN, params)[1] < len(A) // 10  # evicted: read anew


def test_a_chats_next_turn_shelves_nothing(tiny_target) -> None:
    """Only a prompt that would rewind SHELVE_AFTER tokens or more away shelves them (not a chat going on)."""
    pair = ModelPair(tiny_target)
    params = GREEDY.replace(mode="standard")
    answer, _ = _answer(pair, A, params)
    assert len(answer) < SHELVE_AFTER
    _answer(pair, A + answer + TURN, params)
    assert len(pair.prompt_cache) == 0


def test_changing_the_draft_or_the_caches_precision_forgets_every_entry(tiny_target, tiny_draft) -> None:
    pair = ModelPair(tiny_target, tiny_draft)
    for prompt in (A, B):
        _answer(pair, prompt, GREEDY)
    assert len(pair.prompt_cache) == 2  # A's target and draft caches
    pair.set_draft(None)
    assert len(pair.prompt_cache) == 0
    for prompt in (A, B):
        _answer(pair, prompt, DRAFTERS["lookup"])
    assert len(pair.prompt_cache) == 1
    pair.set_kv_bits(8)
    assert len(pair.prompt_cache) == 0


@pytest.mark.parametrize("family", ["qwen3_next", "gemma3_text"])
def test_caches_that_cannot_be_shelved_keep_one_prefix_exactly(family_models, family: str) -> None:
    """Recurrent state (Qwen3-Next) and sliding windows (Gemma 3) cannot be forked: one live prefix, as before."""
    target, _ = family_models(family)
    params = GREEDY.replace(mode="standard")
    expected, _ = _answer(ModelPair(target), A + TURN, params)
    pair = ModelPair(target)
    for prompt in (A, B):
        _answer(pair, prompt, params)
    tokens, cached = _answer(pair, A + TURN, params)
    assert tokens == expected and cached < len(A) // 10 and len(pair.prompt_cache) == 0


@pytest.mark.parametrize("shelf", ["memory", "disk"])
def test_a_question_about_an_image_shelved_earlier_reuses_it_and_another_image_of_its_size_does_not(
        vision_target, vision_images, vision_image_twin, monkeypatch, tmp_path, shelf: str) -> None:
    """Image, another image of the same size (the same ids), then another question about the first image: the
    second is read from its image on, the third takes the first's prefix back from the shelf, or from the file it
    was spilled to (neither the vision tower nor the image's prefill runs again) and answers as a fresh pair does."""
    params = GenerationParams(mode="standard", temperature=0.0, max_tokens=24)
    question, follow_up = "What is in the image?", "What colour is it?"
    expected = generate(follow_up, ModelPair(vision_target), params, images=[vision_images[0]])
    messages, sources = with_images(follow_up, [vision_images[0]])
    image = image_prompt(vision_target, ModelPair(vision_target).prompt_ids(messages), sources)
    pair, towers = ModelPair(vision_target), []
    if shelf == "disk":
        pair.prompt_cache.budget_bytes, pair.prompt_cache.disk = 0, DiskCache(tmp_path, 64 << 20)
    embed = vision_target.sight.model.get_input_embeddings
    monkeypatch.setattr(vision_target.sight.model, "get_input_embeddings", lambda *a, **k: towers.append(1) or embed(*a, **k))
    first = generate(question, pair, params, images=[vision_images[0]])
    other = generate(question, pair, params, images=[vision_image_twin])
    again = generate(follow_up, pair, params, images=[vision_images[0]])
    assert other.stats.prompt_tokens == first.stats.prompt_tokens and other.tokens != first.tokens
    assert other.stats.cached_prompt_tokens <= image.first  # read anew from its image on
    assert again.stats.cached_prompt_tokens > image.last and pair.prompt_cache.hits == 1  # the first image's prefix
    assert len(towers) == 2  # the vision tower saw the first image once
    assert again.tokens == expected.tokens


def _cancelled_after(pair: ModelPair, prompt: list[int], params: GenerationParams, chunks: int) -> int:
    """Read `prompt` until `chunks` prefill chunks are in, then cancel (a client gone mid-prefill); the tokens read."""
    read = [0]

    def cancel() -> bool:
        return read[0] >= chunks

    for event in generate_stream(pair, prompt, params, cancel=cancel):
        if isinstance(event, PrefillEvent) and event.model == "target" and event.processed > 0:
            read[0] += 1
            processed = event.processed
        if isinstance(event, GenerationResult):
            assert event.finish_reason == "cancelled" and event.tokens == []
    return processed


@pytest.mark.parametrize("between", [None, B], ids=["retried at once", "retried after another prompt"])
def test_a_prompt_cancelled_mid_prefill_is_taken_up_where_it_stopped_on_the_retry(tiny_target, between) -> None:
    """A client that gives up while a long prompt is read (Claude Code's stream watchdog, after 5 minutes) sends it
    again, perhaps after another request (its title request): the retry reads only what the first did not."""
    params = GREEDY.replace(mode="standard", prefill_step_size=32)
    expected, _ = _answer(ModelPair(tiny_target), A + TURN, params)
    pair = ModelPair(tiny_target)
    read = _cancelled_after(pair, A + TURN, params, chunks=4)
    four_chunks = 0
    for _ in range(4):
        four_chunks += prefill_chunk_length(32, four_chunks, pair.target_cache.equal_cost_context)
    assert read == four_chunks < len(A + TURN) - 1  # stopped mid-prefill, after its fourth chunk
    if between is not None:
        _answer(pair, between, params)
    tokens, cached = _answer(pair, A + TURN, params)
    assert cached == read and tokens == expected
