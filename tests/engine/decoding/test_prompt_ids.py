"""Prompts and conversations become the target's token ids through its chat template."""

from __future__ import annotations

import pytest

from engine.decoding import prompt_ids
from engine.decoding.prompt_ids import conversation, prompt_token_ids, turn_openers
from engine.errors import PromptError


def test_chat_template_renders_every_turn(tiny_target) -> None:
    tok = tiny_target.tokenizer
    ids = prompt_token_ids(tok, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                                 {"role": "user", "content": "Bye"}], system_prompt="Be brief.")
    assert tok.decode(ids) == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                               "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
                               "<|im_start|>assistant\n")


def test_a_conversation_ending_in_an_answer_continues_it_instead_of_opening_a_new_turn(tiny_target) -> None:
    """Anthropic's prefill: a reply held to start with "{" was answered in a new turn after the "{"."""
    tok = tiny_target.tokenizer
    ids = prompt_token_ids(tok, [{"role": "user", "content": "Give JSON"}, {"role": "assistant", "content": '{"name":'}])
    assert tok.decode(ids) == '<|im_start|>user\nGive JSON<|im_end|>\n<|im_start|>assistant\n{"name":'
    answers = {'{"name":': tok.encode('{"na', add_special_tokens=False) + tok.encode('me":', add_special_tokens=False)}
    spliced = prompt_token_ids(tok, [{"role": "user", "content": "Give JSON"}, {"role": "assistant", "content": '{"name":'}],
                               answers=answers)
    assert spliced[-len(answers['{"name":']):] == answers['{"name":']  # the ids generated, as a follow-up's are
    calls = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]}]
    assert not prompt_ids.continues_last_answer(calls) and not prompt_ids.continues_last_answer(calls[:1])


def test_raw_prompts_skip_the_template(tiny_target) -> None:
    tok = tiny_target.tokenizer
    assert tok.decode(prompt_token_ids(tok, "def f(x):", chat=False)) == "def f(x):"


def test_the_token_a_chatml_template_opens_each_turn_with_ends_an_answer(tiny_target) -> None:
    tok = tiny_target.tokenizer
    assert turn_openers(tok) == {tok.convert_tokens_to_ids("<|im_start|>")}


def test_a_model_without_a_template_has_no_turn_opener() -> None:
    class NoTemplate:
        has_chat_template = False
        chat_template = None

    assert turn_openers(NoTemplate()) == frozenset()


def test_a_given_system_message_is_not_doubled() -> None:
    messages = conversation([{"role": "system", "content": "A"}, {"role": "user", "content": "B"}], "C")
    assert [m["content"] for m in messages] == ["A", "B"]


@pytest.mark.parametrize("prompt", ["", "  \n\t", [], [{"role": "user", "content": " "}], [{"role": "assistant", "content": "x"}]])
def test_empty_prompts_are_refused(tiny_target, prompt) -> None:
    with pytest.raises(PromptError, match="The prompt is empty"):
        prompt_token_ids(tiny_target.tokenizer, prompt)


def test_models_without_a_template_get_a_plain_transcript(tiny_target) -> None:
    class NoTemplate:
        has_chat_template = False

        def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
            return tiny_target.tokenizer.encode(text, add_special_tokens=False)

    ids = prompt_token_ids(NoTemplate(), "Hi", system_prompt="Sys")
    assert tiny_target.tokenizer.decode(ids) == "System: Sys\nUser: Hi\nAssistant:"
    ids = prompt_token_ids(NoTemplate(), [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Well,"}])
    assert tiny_target.tokenizer.decode(ids) == "User: Hi\nAssistant: Well,"


def test_tools_go_into_a_tool_calling_template(tool_target) -> None:
    tok = tool_target.tokenizer
    question = [{"role": "user", "content": "Weather?"}]
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    with_tools = tok.decode(prompt_token_ids(tok, question, tools=[tool]))
    assert '<tools>\n{"type": "function", "function": {"name": "get_weather"' in with_tools
    assert "<tools>" not in tok.decode(prompt_token_ids(tok, question))


class FirstSystemOnly:
    """A tokenizer whose template takes a system prompt only first, as many do (raise_exception otherwise)."""

    has_chat_template = True

    def apply_chat_template(self, messages, add_generation_prompt, tokenize=True, **switch):
        if any(m["role"] == "system" for m in messages[1:]):
            raise ValueError("System message must be at the beginning.")
        text = "".join(f"[{m['role']}]{m['content']}" for m in messages)
        return text if not tokenize else [ord(c) for c in text]

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]


def test_a_later_system_turn_stays_in_place_where_the_template_allows_it(tool_target) -> None:
    tokenizer = tool_target.tokenizer
    ids = prompt_token_ids(tokenizer, [{"role": "user", "content": "Hi"}, {"role": "system", "content": "Be brief."}])
    assert tokenizer.decode(ids).endswith("user\nHi<|im_end|>\n<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>assistant\n")


def test_a_later_system_turn_a_template_refuses_joins_the_system_prompt() -> None:
    messages = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}, {"role": "system", "content": "Be brief."}]
    ids = prompt_token_ids(FirstSystemOnly(), messages)
    assert "".join(map(chr, ids)) == "[system]Be kind.\n\nBe brief.[user]Hi"


def test_only_a_template_that_shows_tools_reads_them(tool_target, tiny_target) -> None:
    from engine.decoding.prompt_ids import template_reads_tools

    assert template_reads_tools(tool_target.tokenizer) and not template_reads_tools(tiny_target.tokenizer)
