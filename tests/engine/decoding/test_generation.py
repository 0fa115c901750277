"""The generation loop: events, text, endings (EOS, stop strings, budget, context, cancel) and prompt caching."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.decoding.cached_model import PREFILL_STEPS, default_prefill_step
from engine.decoding.generation import generate, generate_stream
from engine.decoding.pair import ModelPair
from engine.decoding.prompt_ids import turn_openers
from engine.errors import InvalidParameterError, PromptError, UnsupportedModelError
from engine.events import GenerationResult, PrefillEvent, RoundEvent, TokenEvent
from engine.models.loading import LoadedModel, load_model
from engine.params import GenerationParams
from tests.helpers import scripted, split_events

GREEDY = GenerationParams(drafter="model", temperature=0.0, top_p=1.0, max_tokens=64, adaptive=False, num_draft=3)
PROMPT = "Say something."


def scripted_pair(tiny_target: LoadedModel, tiny_draft: LoadedModel, text: str, extra: list[int] = ()) -> tuple[ModelPair, list[int]]:
    """A pair whose target will generate `text` (then `extra` ids) after PROMPT, drafted by the tiny draft."""
    tokenizer = tiny_target.tokenizer
    prompt_length = len(ModelPair(tiny_target).prompt_ids(PROMPT))
    script = tokenizer.encode(text, add_special_tokens=False) + list(extra)
    return ModelPair(scripted(tiny_target, script, prompt_length), tiny_draft), script


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_event_stream_order_and_totals(tiny_pair: ModelPair, mode: str) -> None:
    events = list(generate_stream(tiny_pair, PROMPT, GREEDY.replace(mode=mode, max_tokens=30)))
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "PrefillEvent" and kinds[-1] == "GenerationResult"
    assert "PrefillEvent" not in kinds[kinds.index("TokenEvent") :]
    tokens, rounds, result = split_events(events)
    # Each round's tokens come right before its RoundEvent, tagged with its index.
    position = 0
    for r in rounds:
        mine = [e for e in events[position:] if isinstance(e, (TokenEvent, RoundEvent))]
        round_tokens = mine[: r.emitted]
        assert all(isinstance(e, TokenEvent) and e.round == r.round for e in round_tokens)
        assert mine[r.emitted] is r
        position = events.index(r) + 1
    assert [t.token for t in tokens] == result.tokens
    assert result.stats.generated_tokens == len(result.tokens) == 30
    assert result.stats.rounds == len(rounds)
    streamed = "".join(t.text for t in tokens)
    assert result.text.startswith(streamed) and len(result.text) - len(streamed) <= 4


def test_standard_decoding_uses_the_same_events_with_target_origins(tiny_pair: ModelPair) -> None:
    tokens, rounds, result = split_events(generate_stream(tiny_pair, PROMPT, GREEDY.replace(mode="standard")))
    assert set(result.origins) == {"target"}
    assert all(r.drafted == 0 and r.emitted == 1 and r.drafter == "none" for r in rounds)
    assert result.stats.acceptance_rate == 0.0 and result.stats.tokens_per_pass == 1.0


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_multibyte_characters_arrive_whole_with_the_token_that_completes_them(tiny_target, tiny_draft, mode) -> None:
    text = "Crème brûlée 🚀 東京"
    pair, script = scripted_pair(tiny_target, tiny_draft, text, [tiny_target.tokenizer.eos_token_id])
    tokens, _, result = split_events(generate_stream(pair, PROMPT, GREEDY.replace(mode=mode)))
    assert result.text == text
    assert "".join(t.text for t in tokens) == text
    assert not any("\ufffd" in t.text for t in tokens)
    assert any(t.text == "" for t in tokens), "the emoji and CJK characters span several byte tokens"
    assert result.finish_reason == "stop"


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_eos_ends_generation_without_being_emitted(tiny_target, tiny_draft, mode) -> None:
    eos = tiny_target.tokenizer.eos_token_id
    pair, script = scripted_pair(tiny_target, tiny_draft, "Hello there.", [eos] + tiny_target.tokenizer.encode(" junk"))
    result = generate(PROMPT, pair, GREEDY.replace(mode=mode))
    assert result.text == "Hello there."
    assert eos not in result.tokens
    assert result.finish_reason == "stop"


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_a_chat_answer_ends_where_the_model_opens_the_next_turn(tiny_target, tiny_draft, mode) -> None:
    """Qwen2.5-Coder-1.5B answering Codex once wrote `<|im_start|>` and a tool call after it, which Codex showed as
    the answer. A completion of the same prompt's ids (no chat of ours) goes on past the token."""
    [opener] = turn_openers(tiny_target.tokenizer)
    pair, script = scripted_pair(tiny_target, tiny_draft, "Hello there.", [opener] + tiny_target.tokenizer.encode("user\nHi"))
    chat = generate(PROMPT, pair, GREEDY.replace(mode=mode))
    completion = generate(pair.prompt_ids(PROMPT), pair, GREEDY.replace(mode=mode, max_tokens=len(script)))
    assert chat.text == "Hello there." and chat.finish_reason == "stop" and opener not in chat.tokens
    assert completion.tokens == script


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_an_answer_ends_at_the_end_ids_it_is_given(tiny_target, tiny_draft, mode) -> None:
    """A filled-in middle ends at its format's end tokens (`fill_in_middle.fim_end_ids`), which no chat knows."""
    end = tiny_target.tokenizer.get_added_vocab()["<|endoftext|>"]
    pair, script = scripted_pair(tiny_target, tiny_draft, "Hello there.", [end] + tiny_target.tokenizer.encode(" junk"))
    params, ids = GREEDY.replace(mode=mode, max_tokens=len(script)), pair.prompt_ids(PROMPT)
    *_, ended = generate_stream(pair, ids, params, end_ids=frozenset({end}))
    assert isinstance(ended, GenerationResult) and ended.text == "Hello there." and ended.finish_reason == "stop"
    assert generate(ids, pair, params).tokens == script  # without them it goes on past the token


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_a_completion_s_text_is_exactly_its_tokens_leading_space_included(tiny_target, tiny_draft, mode) -> None:
    """mlx-lm's detokenizers drop the first text's leading space: a completion of "The opposite of up is" came back
    "over" for " over", and lm-evaluation-harness scored that choice from no token at all. A chat answer still
    starts at its first word."""
    pair, script = scripted_pair(tiny_target, tiny_draft, " over the hill")
    ids = pair.prompt_ids(PROMPT)
    completion = generate(ids, pair, GREEDY.replace(mode=mode, max_tokens=len(script)))
    assert completion.text == " over the hill" == tiny_target.tokenizer.decode(completion.tokens)
    assert generate(PROMPT, pair, GREEDY.replace(mode=mode, max_tokens=len(script))).text == "over the hill"


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_stop_strings_end_generation_before_the_stop_string(tiny_target, tiny_draft, mode) -> None:
    pair, _ = scripted_pair(tiny_target, tiny_draft, "one two STOP three four")
    tokens, _, result = split_events(generate_stream(pair, PROMPT, GREEDY.replace(mode=mode, stop=("STOP",))))
    assert result.text == "one two "
    assert "".join(t.text for t in tokens) == "one two "
    assert result.finish_reason == "stop"


@pytest.mark.parametrize("mode", ["standard", "speculative"])
@pytest.mark.parametrize("max_tokens", [1, 2, 7])
def test_max_tokens_is_never_exceeded(tiny_pair: ModelPair, mode: str, max_tokens: int) -> None:
    result = generate(PROMPT, tiny_pair, GREEDY.replace(mode=mode, max_tokens=max_tokens, num_draft=5))
    assert len(result.tokens) == max_tokens
    assert result.finish_reason == "length"


def test_generation_stops_at_the_context_limit(tiny_target: LoadedModel, tiny_draft: LoadedModel) -> None:
    limited = LoadedModel("limited", tiny_target.path, tiny_target.model, tiny_target.tokenizer, {**tiny_target.config, "max_position_embeddings": 40})
    pair = ModelPair(limited, tiny_draft)
    prompt_length = len(pair.prompt_ids(PROMPT))
    result = generate(PROMPT, pair, GREEDY.replace(max_tokens=500, num_draft=4))
    assert result.finish_reason == "context"
    assert prompt_length + len(result.tokens) == 40


def test_a_prompt_longer_than_the_context_is_refused(tiny_pair: ModelPair) -> None:
    with pytest.raises(PromptError, match=r"The prompt is \d+ tokens but tiny-target reads at most 1024"):
        generate("word " * 1200, tiny_pair, GREEDY)


def test_an_empty_prompt_is_refused(tiny_pair: ModelPair) -> None:
    with pytest.raises(PromptError, match="The prompt is empty"):
        generate("   \n", tiny_pair, GREEDY)


@pytest.mark.parametrize("unknown", [-1, "width"])
def test_a_prompt_of_ids_the_model_does_not_have_is_refused(tiny_pair: ModelPair, unknown) -> None:
    """An id past the embedding is no token: left in, the model would read whatever memory lies there."""
    bad = tiny_pair.vocab_width if unknown == "width" else unknown
    with pytest.raises(InvalidParameterError, match=f"token id {bad}, which this model does not have"):
        generate([5, bad], tiny_pair, GREEDY.replace(max_tokens=2), chat=False)


def test_speculation_with_a_draft_model_needs_one(tiny_target: LoadedModel) -> None:
    """Said in words the app, the CLI and the server share: the app and Compare showed "(--draft MODEL)"."""
    with pytest.raises(InvalidParameterError, match="needs a draft model: load one as the draft") as refused:
        generate(PROMPT, ModelPair(tiny_target), GREEDY.replace(drafter="model"))
    assert "--" not in str(refused.value)
    # Prompt lookup needs no draft model.
    assert generate(PROMPT, ModelPair(tiny_target), GREEDY.replace(drafter="lookup", max_tokens=5)).tokens


class OpaqueCache:
    """A cache type SpecChat's rewind rule does not know (it works, but says nothing about rewinding)."""

    def __init__(self) -> None:
        from mlx_lm.models.cache import KVCache

        self.inner = KVCache()

    def update_and_fetch(self, keys, values):
        return self.inner.update_and_fetch(keys, values)

    def make_mask(self, *args, **kwargs):
        return self.inner.make_mask(*args, **kwargs)

    @property
    def offset(self) -> int:
        return self.inner.offset

    @property
    def state(self):
        return self.inner.state


def test_a_model_whose_cache_cannot_rewind_is_refused_for_speculation_only(tiny_target, monkeypatch) -> None:
    monkeypatch.setattr("engine.decoding.caches.make_prompt_cache", lambda model: [OpaqueCache() for _ in model.layers])
    pair = ModelPair(tiny_target)
    with pytest.raises(UnsupportedModelError) as error:
        generate(PROMPT, pair, GREEDY.replace(drafter="lookup"))
    message = str(error.value)
    assert "tiny-target is a 'llama' model whose cache (OpaqueCache) SpecChat cannot rewind" in message
    assert "Use standard decoding with it" in message and "\n" not in message
    standard = GREEDY.replace(mode="standard", max_tokens=5)
    first = generate(PROMPT, pair, standard).tokens
    assert len(first) == 5 and generate(PROMPT, pair, standard).tokens == first  # started over, exactly


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_cancel_between_rounds_keeps_what_was_generated(tiny_pair: ModelPair, mode: str) -> None:
    rounds_seen = []
    stream = generate_stream(tiny_pair, PROMPT, GREEDY.replace(mode=mode), cancel=lambda: len(rounds_seen) >= 3)
    tokens = []
    for event in stream:
        if isinstance(event, RoundEvent):
            rounds_seen.append(event)
        if isinstance(event, TokenEvent):
            tokens.append(event.token)
        if isinstance(event, GenerationResult):
            result = event
    assert result.finish_reason == "cancelled"
    assert len(rounds_seen) == 3 and result.tokens == tokens and tokens


def test_cancel_during_prefill(tiny_pair: ModelPair) -> None:
    params = GREEDY.replace(prefill_step_size=8)
    events = list(generate_stream(tiny_pair, "word " * 60, params, cancel=lambda: True))
    assert isinstance(events[0], PrefillEvent)
    assert events[-1].finish_reason == "cancelled" and events[-1].tokens == []


def test_prefill_reports_progress_in_chunks_for_both_models(tiny_pair: ModelPair) -> None:
    tiny_pair.reset_caches()
    events = list(generate_stream(tiny_pair, "word " * 60, GREEDY.replace(prefill_step_size=16, max_tokens=2)))
    progress = [e for e in events if isinstance(e, PrefillEvent)]
    assert events[0] == PrefillEvent(0, progress[0].total, "target")  # before the first chunk, which can take seconds
    for model in ("target", "draft"):
        mine = [e.processed for e in progress if e.model == model]
        assert len(mine) >= 4 and mine == sorted(mine)
        assert mine[-1] == progress[0].total - 1  # the last prompt token goes into the first round


def test_a_prompt_is_read_in_chunks_of_the_devices_size_unless_a_size_is_asked(tiny_pair: ModelPair) -> None:
    """On MLX's CPU backend the first chunk is 128 tokens, not a GPU's 512: a Stop waits a quarter as long for a
    prompt read in the same time (`cached_model.default_prefill_step`)."""
    assert GenerationParams().prefill_step_size is None and default_prefill_step() == PREFILL_STEPS["cpu"] == 128
    for asked, first_chunk in [(None, 128), (200, 200)]:
        tiny_pair.reset_caches()
        params = GREEDY.replace(prefill_step_size=asked, max_tokens=1)
        progress = [e for e in generate_stream(tiny_pair, "word " * 100, params) if isinstance(e, PrefillEvent)]
        assert progress[0].processed == 0 and progress[1].processed == first_chunk


def test_an_answer_that_went_on_is_read_from_the_cache_by_the_next_question(tiny_pair: ModelPair) -> None:
    """An answer cut at its limit and continued is one answer to the next question: its ids, the first run's and the
    second's, are spliced in, so the prompt is cached to the end of the answer (it was re-tokenized from the text)."""
    tiny_pair.reset_caches()
    question = [{"role": "user", "content": "Tell me about speculative decoding."}]
    cut = generate(question, tiny_pair, GREEDY.replace(max_tokens=8))
    went_on = generate([*question, {"role": "assistant", "content": cut.text}], tiny_pair, GREEDY.replace(max_tokens=8))
    whole = [*question, {"role": "assistant", "content": cut.text + went_on.text}, {"role": "user", "content": "More?"}]
    ids = tiny_pair.prompt_ids(whole)
    answer_ends = ids.index(cut.tokens[0]) + len(cut.tokens) + len(went_on.tokens)
    assert ids[answer_ends - len(went_on.tokens) : answer_ends] == went_on.tokens
    # all but the answer's last token, which ended its run unread
    assert generate(whole, tiny_pair, GREEDY.replace(max_tokens=1)).stats.cached_prompt_tokens == answer_ends - 1


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_a_follow_up_turn_only_processes_the_new_question(tiny_pair: ModelPair, mode: str) -> None:
    """The answer comes back as the ids generated for it, so the whole earlier conversation is in the cache."""
    first = [{"role": "user", "content": "Tell me about speculative decoding. " * 8}]
    params = GREEDY.replace(mode=mode, max_tokens=40)
    reply = generate(first, tiny_pair, params)
    assert reply.stats.cached_prompt_tokens == 0 and reply.finish_reason == "length"
    follow_up = first + [{"role": "assistant", "content": reply.text}, {"role": "user", "content": "And why?"}]
    follow_up_ids = tiny_pair.prompt_ids(follow_up)
    first_ids = tiny_pair.prompt_ids(first)
    assert follow_up_ids[: len(first_ids) + len(reply.tokens)] == first_ids + reply.tokens
    second = generate(follow_up, tiny_pair, params.replace(max_tokens=5))
    assert second.stats.cached_prompt_tokens >= len(first_ids) + len(reply.tokens) - 1


def test_answers_the_template_rewrites_are_tokenized_as_text(tiny_pair: ModelPair) -> None:
    reply = generate("Hello", tiny_pair, GREEDY.replace(max_tokens=10))
    edited = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": reply.text + " (edited)"},
              {"role": "user", "content": "Go on"}]
    tokenizer = tiny_pair.tokenizer
    assert tiny_pair.prompt_ids(edited) == list(tokenizer.apply_chat_template(edited, add_generation_prompt=True))


@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_seeded_sampling_is_reproducible_with_a_fixed_draft_length(tiny_pair: ModelPair, mode: str) -> None:
    params = GenerationParams(temperature=1.0, max_tokens=30, seed=42, num_draft=3, adaptive=False, mode=mode)
    assert generate(PROMPT, tiny_pair, params).tokens == generate(PROMPT, tiny_pair, params).tokens


def test_summary_line(tiny_pair: ModelPair) -> None:
    result = generate(PROMPT, tiny_pair, GREEDY.replace(max_tokens=30))
    s = result.stats
    assert result.summary().startswith(f"{s.generation_tps:.1f} tok/s, {s.acceptance_rate:.0%} of {s.drafted} drafted")
    assert f"{s.tokens_per_pass:.1f} tokens per pass" in result.summary()


def test_generate_loads_models_by_name(tiny_dirs) -> None:
    target, draft = tiny_dirs
    result = generate(PROMPT, target=str(target), draft=str(draft), params=GREEDY.replace(max_tokens=4))
    assert len(result.tokens) == 4


def test_the_context_limit_comes_from_the_models_the_mode_reads(tiny_target: LoadedModel, tiny_draft: LoadedModel) -> None:
    """A draft with a shorter context limits speculation with the draft model only, and the error names it."""
    short_draft = LoadedModel("short-draft", tiny_draft.path, tiny_draft.model, tiny_draft.tokenizer,
                              {**tiny_draft.config, "max_position_embeddings": 40})
    pair = ModelPair(tiny_target, short_draft)
    prompt = "word " * 30  # more than the draft's 40 tokens once templated, far less than the target's 1024
    with pytest.raises(PromptError, match=r"The prompt is \d+ tokens but short-draft reads at most 40"):
        generate(prompt, pair, GREEDY)
    for params in (GREEDY.replace(mode="standard", max_tokens=5), GREEDY.replace(drafter="lookup", max_tokens=5)):
        assert len(generate(prompt, pair, params).tokens) == 5


@pytest.fixture(scope="module")
def wide_head_pair(tmp_path_factory) -> ModelPair:
    """A tiny pair whose attention heads are 32 wide, so that keys and values can be quantized in groups."""
    from engine.fixtures.tiny_models import TinySpec, build_tiny_pair
    from engine.models.loading import load_model

    target, draft = build_tiny_pair(tmp_path_factory.mktemp("wide"), spec=TinySpec(num_heads=2, num_kv_heads=1))
    return ModelPair(load_model(str(target)), load_model(str(draft)))


@pytest.mark.parametrize("bits", [8, 4])
def test_quantized_kv_caches_keep_speculation_exact(wide_head_pair: ModelPair, bits: int) -> None:
    tiny_pair = wide_head_pair
    params = GREEDY.replace(kv_bits=bits, max_tokens=40)
    expected = generate(PROMPT, tiny_pair, params.replace(mode="standard")).tokens
    assert generate(PROMPT, tiny_pair, params).tokens == expected
    assert generate(PROMPT, tiny_pair, params.replace(drafter="lookup")).tokens == expected
    assert all(getattr(c, "bits", None) == bits for cache in tiny_pair.caches() for c in cache.cache)
    generate(PROMPT, tiny_pair, GREEDY.replace(max_tokens=2))
    assert not any(hasattr(c, "bits") for cache in tiny_pair.caches() for c in cache.cache)  # back to full precision


SAMPLED = GenerationParams(drafter="model", temperature=1.0, top_p=1.0, max_tokens=40, adaptive=False, num_draft=4, seed=11)


def test_lenience_zero_generates_exactly_what_the_exact_rule_does(tiny_pair: ModelPair) -> None:
    exact = generate(PROMPT, tiny_pair, SAMPLED)
    zero = generate(PROMPT, tiny_pair, SAMPLED.replace(lenience=0.0))
    assert zero.tokens == exact.tokens and zero.origins == exact.origins and not zero.lossy


def test_lenience_one_accepts_every_draft_token_and_says_lossy(tiny_pair: ModelPair) -> None:
    exact = generate(PROMPT, tiny_pair, SAMPLED)
    result = generate(PROMPT, tiny_pair, SAMPLED.replace(lenience=1.0))
    assert exact.stats.accepted < exact.stats.drafted  # the tiny pair disagrees, so this shows something
    assert result.stats.drafted > 0 and result.stats.accepted == result.stats.drafted
    assert result.lossy and "LOSSY (lenience 1)" in result.summary() and result.as_dict()["lossy"] is True


def test_standard_decoding_ignores_lenience(tiny_pair: ModelPair) -> None:
    result = generate(PROMPT, tiny_pair, SAMPLED.replace(mode="standard", lenience=0.5))
    assert not result.lossy and "LOSSY" not in result.summary()


def test_a_draft_model_the_policy_gave_up_on_is_not_prefilled(tiny_pair: ModelPair) -> None:
    """Issue 27: through the server, prefilling a draft that would not draft cost about a tenth of the speed.
    A probe's draft catches up on the prompt instead, and the answer is the same."""
    from engine.decoding.generation import _policy
    from engine.decoding.policy.estimates import RoundCosts

    params = GREEDY.replace(adaptive=True, max_tokens=30)
    policy = _policy(tiny_pair, params, "chat")
    for _ in range(20):  # a draft that is never accepted
        policy.observe(RoundCosts("model", 4, 0, 0.01, 0.06))
        policy.observe(RoundCosts("none", 0, 0, 0.0, 0.02))
    assert policy.gave_up_on("model")
    events = list(generate_stream(tiny_pair, PROMPT, params))
    assert {e.model for e in events if isinstance(e, PrefillEvent)} == {"target"}
    assert events[-1].tokens == generate(PROMPT, tiny_pair, GREEDY.replace(mode="standard", max_tokens=30)).tokens
    fresh = list(generate_stream(tiny_pair, PROMPT + " again", GREEDY.replace(adaptive=False, max_tokens=5)))
    assert {e.model for e in fresh if isinstance(e, PrefillEvent)} == {"target", "draft"}


@pytest.mark.parametrize("drafter", ["model", "auto"])
def test_the_prompt_s_kind_is_read_once_an_answer(tiny_pair: ModelPair, monkeypatch, drafter: str) -> None:
    """Reading it decodes up to 2048 of the prompt's tokens: the prefill (whether to prefill the draft model, for the
    prompt cache and for the pass itself) and the drafters (whose policy is the kind's) share one reading."""
    from engine.decoding import generation

    read: list[str] = []
    kind_of = generation.kind_of
    monkeypatch.setattr(generation, "kind_of", lambda text: read.append(text) or kind_of(text))
    generate("Finish this:\n```python\ndef add(a, b):\n```", tiny_pair, GREEDY.replace(drafter=drafter, adaptive=True))
    assert len(read) == 1 and "def add" in read[0]


def test_a_standard_answer_never_reads_the_prompt_s_kind(tiny_pair: ModelPair, monkeypatch) -> None:
    """Only a speculative answer's policies and drafters keep their estimates per kind: a standard answer would
    decode up to 2048 of the prompt's tokens for nothing."""
    from engine.decoding import generation

    read: list[str] = []
    kind_of = generation.kind_of
    monkeypatch.setattr(generation, "kind_of", lambda text: read.append(text) or kind_of(text))
    generate("Finish this:\n```python\ndef add(a, b):\n```", tiny_pair, GREEDY.replace(mode="standard", adaptive=True))
    assert read == []


def test_a_compare_run_never_drafts_from_saved_answers_to_its_question(tiny_pair: ModelPair) -> None:
    """Issue 22: a new prompt answered at 1.1 tokens per pass; Compare on it then claimed 5.00x, 100% accepted,
    because lookup copied the answer just saved. A Compare run drafts as if no conversation had asked it."""
    question = [{"role": "user", "content": "Tell me about the lighthouse keeper and the storm at sea."}]
    params = GREEDY.replace(drafter="lookup", adaptive=False, num_draft=4, max_tokens=40)
    generate(question, tiny_pair, params)  # answered and saved: the history holds it
    tiny_pair.history.add(tiny_pair.prompt_ids([{"role": "user", "content": "Something else entirely."}]))
    copied = generate(question, tiny_pair, params)
    compared = list(generate_stream(tiny_pair, question, params, comparing=True))[-1]
    unsaved = generate(question, tiny_pair, params.replace(history=False))
    assert compared.tokens == unsaved.tokens == copied.tokens
    assert (compared.stats.drafted, compared.stats.accepted) == (unsaved.stats.drafted, unsaved.stats.accepted)
    assert copied.stats.accepted > compared.stats.accepted + 10  # what the history gave the second answer
    assert tiny_pair.history.documents == 2  # the Compare run added nothing


def test_tokens_per_pass_counts_the_pass_that_ended_the_answer(tiny_target: LoadedModel, tiny_draft: LoadedModel) -> None:
    """Issue 22: 'tokens per pass' read below 1 (0.93-0.99) when little was drafted: the pass that produced the
    end-of-sequence token counted as a pass with no token."""
    from engine.events import GenerationStats

    assert GenerationStats(generated_tokens=9, rounds=10, ended_on_eos=True).tokens_per_pass == 1.0
    assert GenerationStats(generated_tokens=9, rounds=10).tokens_per_pass == 0.9  # cut by the budget mid-round: not 1
    [eos] = tiny_target.tokenizer.eos_token_ids
    pair, _ = scripted_pair(tiny_target, tiny_draft, " one two three four five", [eos])
    result = generate(PROMPT, pair, GREEDY.replace(mode="standard"))
    assert result.finish_reason == "stop" and result.stats.ended_on_eos and result.stats.tokens_per_pass == 1.0


def test_a_base_model_chatting_stops_where_it_starts_the_next_user_turn(tmp_path: Path) -> None:
    """A model without a chat template gets the fallback transcript and, like a real base model, goes on to write
    a "User:" turn of its own; the answer ends there, in standard and speculative decoding alike."""
    from engine.decoding.prompt_ids import FALLBACK_TURN_END
    from engine.fixtures.tiny_base_model import NEXT_TURN, build_tiny_base_model

    base = load_model(str(build_tiny_base_model(tmp_path)))
    pair = ModelPair(base)
    assert pair.is_base_model
    raw = generate("What is the capital of France?", pair, GenerationParams(mode="standard", temperature=0.0, max_tokens=30), chat=False)
    assert NEXT_TURN.strip() in raw.text or FALLBACK_TURN_END.strip() in raw.text  # the model does write the turn
    for mode in ("standard", "speculative"):
        params = GenerationParams(mode=mode, drafter="lookup", temperature=0.0, max_tokens=30)
        result = generate("What is the capital of France?", ModelPair(base), params)
        assert result.text.strip() == "Paris." and result.finish_reason == "stop", (mode, result.text)


def test_the_time_to_first_token_counts_taking_a_prefix_back(tiny_pair: ModelPair, monkeypatch) -> None:
    """A prefix read back from disk (or one written to it) is part of the wait: the clock starts before the recall."""
    import time

    real, skipped = time.perf_counter, [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: real() + skipped[0])
    recall = tiny_pair.prompt_cache.recall
    monkeypatch.setattr(tiny_pair.prompt_cache, "recall", lambda *a: (recall(*a), skipped.__setitem__(0, 100.0)))
    stats = generate("Hi", tiny_pair, GenerationParams(mode="standard", max_tokens=2)).stats
    assert stats.ttft_s >= 100.0 and stats.prompt_s >= 100.0
