"""Splitting a thinking model's reasoning from its answer: on driven token streams, and through generate_stream."""

from __future__ import annotations

import pytest

from engine.decoding.generation import generate, generate_stream
from engine.decoding.pair import ModelPair
from engine.decoding.prompt_ids import for_template
from engine.decoding.reasoning import ReasoningSplitter, ThinkMarkers, can_switch_thinking, think_markers
from engine.events import GenerationResult, RoundEvent, TokenEvent
from engine.fixtures.tiny_thinking import ANSWER, REASONING
from engine.params import GenerationParams

OPEN, CLOSE, BLANK, A, B, C = 1, 2, 9, 10, 11, 12
TAGS = ThinkMarkers(opens=((OPEN,),), closes=((CLOSE,),))
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
GREEDY = GenerationParams(drafter="model", temperature=0.0, top_p=1.0, max_tokens=60, adaptive=False, num_draft=4)


def parts(splitter: ReasoningSplitter, tokens: list[int]) -> list[tuple[int, str]]:
    """Each token with its part, as the splitter decides them (the held ones when they are decided)."""
    decided = [pair for token in tokens for pair in splitter.push(token, token)]
    return decided + splitter.flush()


def splitter(markers: ThinkMarkers = TAGS, prompt: list[int] | None = None) -> ReasoningSplitter:
    return ReasoningSplitter(markers, prompt or [], lambda token: token == BLANK)


def test_tokens_between_the_markers_are_reasoning_and_the_blank_after_a_marker_is_the_markers() -> None:
    assert parts(splitter(), [OPEN, BLANK, A, BLANK, B, CLOSE, BLANK, BLANK, C, BLANK, A]) == [
        (OPEN, "marker"), (BLANK, "marker"), (A, "reasoning"), (BLANK, "reasoning"), (B, "reasoning"),
        (CLOSE, "marker"), (BLANK, "marker"), (BLANK, "marker"), (C, "answer"), (BLANK, "answer"), (A, "answer"),
    ]


def test_output_starts_inside_reasoning_when_the_prompt_opened_it() -> None:
    assert parts(splitter(prompt=[A, OPEN, BLANK]), [A, CLOSE, B]) == [(A, "reasoning"), (CLOSE, "marker"), (B, "answer")]


def test_a_prompt_that_closed_an_empty_think_block_starts_in_the_answer() -> None:
    """Thinking off: Qwen3's no-think prompt ends with '<think>\\n\\n</think>\\n\\n'."""
    assert parts(splitter(prompt=[OPEN, BLANK, CLOSE, BLANK]), [A, B]) == [(A, "answer"), (B, "answer")]


def test_a_marker_of_several_tokens_is_held_until_it_completes_or_proves_not_to_be_one() -> None:
    markers = ThinkMarkers(opens=((OPEN, A),), closes=((CLOSE, B),))
    s = splitter(markers)
    assert s.push(OPEN, "o") == []  # maybe a marker: held
    assert s.push(A, "a") == [("o", "marker"), ("a", "marker")]
    assert s.push(CLOSE, "c") == []
    assert s.push(C, "x") == [("c", "reasoning"), ("x", "reasoning")]  # not the closing marker after all
    assert parts(s, [CLOSE, B, C, CLOSE]) == [(CLOSE, "marker"), (B, "marker"), (C, "answer"), (CLOSE, "answer")]


class HarmonyTokenizer:
    """The parts of gpt-oss's tokenizer the markers are read from (its harmony tokens, one id per word)."""

    words = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "assistant", "analysis", "final"]
    has_thinking = False

    def get_vocab(self) -> dict[str, int]:
        return {word: i for i, word in enumerate(self.words)}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids = []
        while text:
            word = next(w for w in self.words if text.startswith(w))
            ids.append(self.words.index(word))
            text = text[len(word):]
        return ids


def test_gpt_oss_analysis_channel_is_reasoning_and_its_final_channel_header_is_hidden() -> None:
    tokenizer = HarmonyTokenizer()
    markers = think_markers(tokenizer)
    assert markers is not None
    ids = tokenizer.encode
    stream = ids("<|channel|>analysis<|message|>") + [A, B] + ids("<|end|><|start|>assistant<|channel|>final<|message|>") + [C]
    decided = parts(splitter(markers, ids("<|start|>assistant")), stream)
    assert [token for token, part in decided if part == "reasoning"] == [A, B]
    assert [token for token, part in decided if part == "answer"] == [C]


def test_models_without_markers_have_none_and_no_switch(tiny_pair: ModelPair) -> None:
    assert think_markers(tiny_pair.tokenizer) is None and tiny_pair.think_markers is None
    assert not tiny_pair.can_switch_thinking


def stream(pair: ModelPair, prompt, params: GenerationParams) -> tuple[list[TokenEvent], list[RoundEvent], GenerationResult]:
    events = list(generate_stream(pair, prompt, params))
    return ([e for e in events if isinstance(e, TokenEvent)], [e for e in events if isinstance(e, RoundEvent)], events[-1])


@pytest.mark.parametrize("opens_in_prompt", [False, True])
@pytest.mark.parametrize("mode", ["standard", "speculative"])
def test_generation_streams_reasoning_and_answer_apart(thinking_models, opens_in_prompt: bool, mode: str) -> None:
    pair = ModelPair(*thinking_models(opens_in_prompt))
    assert pair.can_switch_thinking
    tokens, rounds, result = stream(pair, QUESTION, GREEDY.replace(mode=mode, drafter="model"))
    assert "".join(t.text for t in tokens if t.reasoning) == REASONING == result.reasoning
    assert "".join(t.text for t in tokens if t.part == "answer") == ANSWER == result.text
    assert all(t.text == "" for t in tokens if t.part == "marker")
    assert [t.part for t in tokens] == result.parts and len(result.parts) == len(result.tokens)
    assert tokens[0].reasoning == opens_in_prompt  # Qwen3-style: the model writes "<think>" first, a marker
    assert result.stats.thinking.tokens + result.stats.answering.tokens == len([t for t in tokens if t.part != "marker"])
    assert result.stats.thinking.rounds + result.stats.answering.rounds == len(rounds) == result.stats.rounds
    assert result.stats.thinking.seconds > 0


def test_think_off_renders_the_no_think_prompt_and_answers_without_reasoning(thinking_pair: ModelPair) -> None:
    off = thinking_pair.tokenizer.decode(thinking_pair.prompt_ids(QUESTION, think=False))
    on = thinking_pair.tokenizer.decode(thinking_pair.prompt_ids(QUESTION))
    assert off.endswith("<think>\n\n</think>\n\n") and not on.endswith("</think>\n\n")
    tokens, _, result = stream(thinking_pair, QUESTION, GREEDY.replace(think=False))
    assert result.text == ANSWER and result.reasoning == "" and not any(t.reasoning for t in tokens)
    assert result.stats.thinking.rounds == 0 and "thinking" not in result.summary()


def test_speculation_is_counted_apart_while_thinking_and_while_answering(thinking_pair: ModelPair) -> None:
    _, rounds, result = stream(thinking_pair, QUESTION, GREEDY.replace(drafter="model"))
    thinking = [r for r in rounds if r.reasoning]
    assert 0 < len(thinking) < len(rounds)
    s = result.stats
    assert (s.thinking.drafted, s.thinking.accepted) == (sum(r.drafted for r in thinking), sum(r.accepted for r in thinking))
    assert s.thinking.drafted + s.answering.drafted == s.drafted and s.thinking.accepted + s.answering.accepted == s.accepted
    assert s.thinking.acceptance_rate < 1  # the draft misses one link of the reasoning: a correction
    assert "while thinking" in result.summary() and "while answering" in result.summary()


def test_a_round_counts_in_the_part_most_of_its_tokens_went_to(thinking_pair: ModelPair) -> None:
    """The first round begins before `<think>`: it was counted as answering while its tokens were reasoning (the
    fold said "while thinking: nothing drafted" under drafts coloured in the reasoning)."""
    tokens, rounds, result = stream(thinking_pair, QUESTION, GREEDY.replace(drafter="model"))
    for r in rounds:
        parts = [t.part for t in tokens if t.round == r.round]
        if parts.count("reasoning") != parts.count("answer"):
            assert r.reasoning == (parts.count("reasoning") > parts.count("answer")), (r.round, parts)
    assert rounds[0].reasoning and rounds[0].drafted and result.stats.thinking.drafted >= rounds[0].drafted


def test_the_next_turn_drops_the_reasoning_and_reuses_the_cache_up_to_it(thinking_pair: ModelPair) -> None:
    """Qwen3's rule: earlier answers are rendered without their reasoning; the prompt cache holds the first turn's
    prompt, so only what follows it is processed again (the reasoning it had is no longer in the conversation)."""
    params = GREEDY.replace(drafter="model")
    first = generate(QUESTION, thinking_pair, params)
    follow_up = QUESTION + [{"role": "assistant", "content": first.text, "reasoning_content": first.reasoning},
                            {"role": "user", "content": "And of Japan?"}]
    rendered = thinking_pair.tokenizer.decode(thinking_pair.prompt_ids(follow_up))
    assert f"<|im_start|>assistant\n{ANSWER}<|im_end|>" in rendered and REASONING not in rendered
    second = generate(follow_up, thinking_pair, params)
    assert second.stats.cached_prompt_tokens >= len(thinking_pair.prompt_ids(QUESTION))


def test_reasoning_content_is_kept_for_templates_that_render_it_and_dropped_for_others(thinking_pair: ModelPair,
                                                                                       tiny_pair: ModelPair) -> None:
    answer = {"role": "assistant", "content": "Paris.", "reasoning_content": "Easy."}
    assert for_template(thinking_pair.tokenizer, [answer]) == [answer]
    assert for_template(tiny_pair.tokenizer, [answer]) == [{"role": "assistant", "content": "Paris."}]
    after_last_question = QUESTION + [answer]  # an agent's turn in progress: Qwen3 shows its reasoning again
    rendered = thinking_pair.tokenizer.apply_chat_template(after_last_question, tokenize=False)
    assert "<think>\nEasy.\n</think>" in rendered
    assert not can_switch_thinking(tiny_pair.tokenizer)
