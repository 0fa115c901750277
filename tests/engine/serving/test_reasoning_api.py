"""Reasoning on the server: each API's thinking switch and earlier reasoning, and a thinking model's reasoning
arriving apart from its answer through the official clients (chat completions' reasoning_content, Anthropic's
thinking blocks, a Responses reasoning item), whole and streamed.

The tiny thinking model (engine/fixtures/tiny_thinking.py) greedily writes `<think>REASONING</think>ANSWER`, and
with thinking off ANSWER alone; what every API sends must equal the engine's own `generate`.
"""

from __future__ import annotations

import json

import anthropic
import httpx
import openai
import pytest

from engine.decoding.generation import generate
from engine.serving import anthropic_api, responses_api
from engine.serving.openai_api import ApiError
from engine.serving.reasoning_api import parse_openai
from tests.engine.serving.scripted import GREEDY

MODELS = ["tiny-thinking"]
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
LIMIT = 40


@pytest.mark.parametrize(
    "body, think",
    [
        ({}, True),
        ({"chat_template_kwargs": {"enable_thinking": False}}, False),
        ({"reasoning_effort": "none"}, False),
        ({"reasoning_effort": "minimal"}, True),  # OpenAI's minimal still reasons: a switch has no "less"
        ({"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": True}}, True),  # explicit wins
    ],
)
def test_chat_requests_switch_thinking(body, think) -> None:
    assert parse_openai({"messages": QUESTION, **body}, "chat", MODELS, GREEDY).params.think is think


def test_anthropic_and_responses_requests_switch_thinking() -> None:
    def anthropic_think(thinking):
        return anthropic_api.parse_request({"max_tokens": 9, "messages": QUESTION, "thinking": thinking}, MODELS, GREEDY).params.think

    def responses_think(reasoning):
        return responses_api.parse_request({"input": "Hi", "reasoning": reasoning}, MODELS, GREEDY).params.think

    assert (anthropic_think({"type": "disabled"}), anthropic_think({"type": "enabled", "budget_tokens": 1024})) == (False, True)
    assert anthropic_think({"type": "adaptive"}) and anthropic_think(None)
    assert (responses_think({"effort": "none"}), responses_think({"effort": "high"}), responses_think(None)) == (False, True, True)


@pytest.mark.parametrize(
    "parse, body, param",
    [
        (lambda b: parse_openai(b, "chat", MODELS, GREEDY), {"messages": QUESTION, "reasoning_effort": "lots"}, "reasoning_effort"),
        (lambda b: parse_openai(b, "chat", MODELS, GREEDY), {"messages": QUESTION, "chat_template_kwargs": {"enable_thinking": "no"}},
         "chat_template_kwargs.enable_thinking"),
        (lambda b: anthropic_api.parse_request(b, MODELS, GREEDY), {"max_tokens": 9, "messages": QUESTION, "thinking": {"type": "on"}},
         "thinking"),
        (lambda b: anthropic_api.parse_request(b, MODELS, GREEDY), {"max_tokens": 9, "messages": QUESTION,
                                                                     "thinking": {"type": "enabled"}}, "thinking.budget_tokens"),
        (lambda b: responses_api.parse_request(b, MODELS, GREEDY), {"input": "Hi", "reasoning": {"effort": "lots"}},
         "reasoning.effort"),
    ],
)
def test_bad_thinking_switches_are_refused_naming_the_field(parse, body, param) -> None:
    with pytest.raises(ApiError) as caught:
        parse(body)
    assert (caught.value.status, caught.value.param) == (400, param)


def test_earlier_reasoning_in_each_apis_history_reaches_the_chat_as_reasoning_content() -> None:
    said = {"role": "assistant", "content": "Paris.", "reasoning_content": "France's capital."}
    chat = parse_openai({"messages": QUESTION + [said] + QUESTION}, "chat", MODELS, GREEDY).prompt
    mlx_lm_style = parse_openai({"messages": QUESTION + [{"role": "assistant", "content": "Paris.", "reasoning": "France's capital."}]
                                 + QUESTION}, "chat", MODELS, GREEDY).prompt
    blocks = [{"type": "thinking", "thinking": "France's capital.", "signature": "x"}, {"type": "text", "text": "Paris."}]
    messages = anthropic_api.parse_request({"max_tokens": 9, "messages": QUESTION + [{"role": "assistant", "content": blocks}]
                                            + QUESTION}, MODELS, GREEDY).prompt
    items = [{"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "France's capital."}]},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Paris."}]}]
    responses = responses_api.parse_request({"input": QUESTION + items + QUESTION}, MODELS, GREEDY).prompt
    assert chat[1] == mlx_lm_style[1] == messages[1] == responses[1] == said
    assert len(responses) == 3


def test_a_responses_reasoning_item_joins_the_calls_of_its_turn() -> None:
    items = [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "Ask the tool."}]},
             {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "22 C"}]
    prompt = responses_api.parse_request({"input": QUESTION + items}, MODELS, GREEDY).prompt
    assert prompt[1]["reasoning_content"] == "Ask the tool." and prompt[1]["tool_calls"][0]["id"] == "c1"
    assert [m["role"] for m in prompt] == ["user", "assistant", "tool"]


# Through the server, on the tiny thinking pair (greedy, speculative with the draft model).

@pytest.fixture(scope="module")
def expected(thinking_models):
    """generate()'s answer with thinking on and off."""
    from engine.decoding.pair import ModelPair

    on = generate(QUESTION, ModelPair(*thinking_models(False)), GREEDY.replace(max_tokens=LIMIT))
    off = generate(QUESTION, ModelPair(*thinking_models(False)), GREEDY.replace(max_tokens=LIMIT, think=False))
    assert on.reasoning and on.text and not off.reasoning  # the fixture thinks, then answers; off, it answers
    return {True: on, False: off}


@pytest.fixture
def oai(thinking_url) -> openai.OpenAI:
    return openai.OpenAI(base_url=thinking_url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture
def claude(thinking_url) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=thinking_url, api_key="unused", max_retries=0)


def _model(client: openai.OpenAI | anthropic.Anthropic) -> str:
    """The served model's name (the tiny thinking target's folder name)."""
    return httpx.get(str(client.base_url).removesuffix("/").removesuffix("/v1") + "/v1/models").json()["data"][0]["id"]


def test_chat_completions_send_the_reasoning_as_reasoning_content(oai, expected) -> None:
    message = oai.chat.completions.create(model=_model(oai), messages=QUESTION, max_tokens=LIMIT).choices[0].message
    assert (message.content, message.reasoning_content) == (expected[True].text, expected[True].reasoning)
    assert "<think>" not in message.content and "</think>" not in message.reasoning_content


def test_streamed_chat_completions_send_reasoning_deltas_before_the_answers(oai, expected) -> None:
    chunks = oai.chat.completions.create(model=_model(oai), messages=QUESTION, max_tokens=LIMIT, stream=True)
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    kinds = ["reasoning" if getattr(d, "reasoning_content", None) else "content" for d in deltas if d.content or
             getattr(d, "reasoning_content", None)]
    assert "".join(getattr(d, "reasoning_content", None) or "" for d in deltas) == expected[True].reasoning
    assert "".join(d.content or "" for d in deltas) == expected[True].text
    assert kinds == sorted(kinds, key=lambda kind: kind == "content") and "reasoning" in kinds


@pytest.mark.parametrize("switch", [{"reasoning_effort": "none"}, {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}])
def test_chat_completions_with_thinking_off_answer_without_reasoning(oai, expected, switch) -> None:
    message = oai.chat.completions.create(model=_model(oai), messages=QUESTION, max_tokens=LIMIT, **switch).choices[0].message
    assert message.content == expected[False].text and getattr(message, "reasoning_content", None) is None


def test_anthropic_messages_give_a_thinking_block_before_the_text(claude, expected) -> None:
    message = claude.messages.create(model=_model(claude), max_tokens=LIMIT, messages=QUESTION)
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert (message.content[0].thinking, message.content[1].text) == (expected[True].reasoning, expected[True].text)
    assert message.content[0].signature
    off = claude.messages.create(model=_model(claude), max_tokens=LIMIT, messages=QUESTION, thinking={"type": "disabled"})
    assert [block.type for block in off.content] == ["text"] and off.content[0].text == expected[False].text


def test_a_streamed_anthropic_message_streams_the_thinking_block_in_anthropics_order(claude, thinking_url, expected) -> None:
    with claude.messages.stream(model=_model(claude), max_tokens=LIMIT, messages=QUESTION) as stream:
        thinking = "".join(event.thinking for event in stream if event.type == "thinking")
        final = stream.get_final_message()
    assert thinking == final.content[0].thinking == expected[True].reasoning and final.content[1].text == expected[True].text
    body = {"max_tokens": LIMIT, "messages": QUESTION, "stream": True}
    with httpx.stream("POST", thinking_url + "/v1/messages", json=body, timeout=120) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    shapes = [(e["type"], (e.get("content_block") or e.get("delta") or {}).get("type")) for e in events]
    first_text = shapes.index(("content_block_start", "text"))
    assert shapes[1] == ("content_block_start", "thinking")
    assert shapes[first_text - 2 : first_text] == [("content_block_delta", "signature_delta"), ("content_block_stop", None)]
    assert set(shapes[2 : first_text - 2]) == {("content_block_delta", "thinking_delta")}


def test_responses_give_a_reasoning_item_before_the_message(oai, expected) -> None:
    response = oai.responses.create(model=_model(oai), input=QUESTION, max_output_tokens=LIMIT)
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].content[0].text == expected[True].reasoning and response.output_text == expected[True].text
    assert response.usage.output_tokens_details.reasoning_tokens == expected[True].stats.thinking.tokens > 0
    off = oai.responses.create(model=_model(oai), input=QUESTION, max_output_tokens=LIMIT, reasoning={"effort": "none"})
    assert [item.type for item in off.output] == ["message"] and off.output_text == expected[False].text


def test_streamed_responses_send_reasoning_text_events(oai, expected) -> None:
    events = list(oai.responses.create(model=_model(oai), input=QUESTION, max_output_tokens=LIMIT, stream=True))
    types = [event.type for event in events]
    reasoning = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    answer = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert (reasoning, answer) == (expected[True].reasoning, expected[True].text)
    assert types.index("response.reasoning_text.done") < types.index("response.output_text.delta")
    done = events[-1].response
    assert events[-1].type == "response.completed" and [item.type for item in done.output] == ["reasoning", "message"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
