"""OpenAI's Responses API: the request translation, and the server driven by the `openai` client's responses.create.

Greedy text must equal the engine's own `generate`; the function call round trip is scripted on the tiny tool
model (tests/engine/serving/scripted.py), since random weights never call a tool.
"""

from __future__ import annotations

import httpx
import openai
import pytest

from engine.decoding.generation import generate
from engine.serving.openai_api import ApiError
from engine.serving.responses_api import parse_request
from tests.engine.serving.scripted import FINAL_ANSWER, GREEDY, WEATHER_CALL, ScriptedRunner, serving

MODELS = ["tiny-target"]
QUESTION = "Tell me about the sea."
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def parse(body: dict):
    return parse_request(body, MODELS, GREEDY)


def test_instructions_and_input_items_become_chat_messages() -> None:
    body = {"instructions": "Be brief.", "max_output_tokens": 9, "input": [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "22 C"},
        {"type": "reasoning", "summary": []}]}
    request = parse(body)
    assert request.prompt == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "22 C"},
    ]
    assert request.params.max_tokens == 9 and parse({"input": "Hi"}).prompt == [{"role": "user", "content": "Hi"}]


def test_function_tools_and_a_named_choice_reach_the_job() -> None:
    tooling = parse({"input": "Hi", "tools": [WEATHER], "tool_choice": {"type": "function", "name": "get_weather"}}).tooling
    assert tooling.tools[0]["function"]["parameters"] == WEATHER["parameters"]
    assert (tooling.choice.mode, tooling.choice.name) == ("named", "get_weather")


@pytest.mark.parametrize(
    "body, param",
    [
        ({}, "input"),
        ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"input": [{"type": "image_generation_call"}]}, "input[0].type"),
        ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{x"}]}, "input[0]"),
        ({"input": "Hi", "previous_response_id": "resp_unknown"}, "previous_response_id"),
        ({"input": "Hi", "tools": [{"type": "function"}]}, "tools[0]"),
        ({"input": "Hi", "max_output_tokens": 0}, "max_output_tokens"),
    ],
)
def test_bad_bodies_are_refused_naming_the_field(body, param) -> None:
    with pytest.raises(ApiError) as caught:
        parse(body)
    assert (caught.value.status, caught.value.param) == (400, param)


# Through the server, on the tiny pair (greedy, speculative with the draft model).


@pytest.fixture
def base(tiny_url) -> str:
    return tiny_url


@pytest.fixture
def client(base) -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)


def test_a_response_equals_generate_with_usage_and_speculation(client, tiny_pair) -> None:
    expected = generate([{"role": "user", "content": QUESTION}], tiny_pair, GREEDY.replace(max_tokens=24))
    response = client.responses.create(model="tiny-target", input=QUESTION, max_output_tokens=24)
    assert response.output_text == expected.text and [item.type for item in response.output] == ["message"]
    assert response.status == ("completed" if expected.finish_reason == "stop" else "incomplete")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (expected.stats.prompt_tokens, len(expected.tokens))
    assert response.model_extra["speculation"]["drafter"] == "model"


def test_a_streamed_response_sends_the_responses_events_in_order(client, tiny_pair) -> None:
    expected = generate([{"role": "user", "content": QUESTION}], tiny_pair, GREEDY.replace(max_tokens=24))
    events = list(client.responses.create(model="tiny-target", input=QUESTION, max_output_tokens=24, stream=True))
    names = [e.type for e in events]
    deltas = names.count("response.output_text.delta")
    assert names == ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"] + [
        "response.output_text.delta"] * deltas + ["response.output_text.done", "response.content_part.done",
                                                  "response.output_item.done", f"response.{events[-1].response.status}"]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == expected.text
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].response.output_text == expected.text
    assert events[-1].response.model_extra["speculation"]["drafter"] == "model"


@pytest.mark.parametrize(
    "body, status, param",
    [
        (b"{bad", 400, None),
        (b'{"input": []}', 400, "input"),
        (b'{"model": "gpt-5", "input": "x"}', 404, "model"),
        (b'{"input": "x", "previous_response_id": "resp_1"}', 400, "previous_response_id"),
    ],
)
def test_bad_requests_get_openais_error_shape_and_the_server_keeps_serving(base, client, body, status, param) -> None:
    response = httpx.post(base + "/v1/responses", content=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["param"] == param and error["message"] and "Traceback" not in response.text
    assert client.responses.create(model="tiny-target", input="Hi", max_output_tokens=3).output


# A function call round trip, scripted on the tool model.

ASKED = "What is the weather in Paris?"


@pytest.fixture
def tool_client(tool_target):
    runner = ScriptedRunner(tool_target.tokenizer, [WEATHER_CALL, FINAL_ANSWER] * 2)
    with serving(runner) as url:
        yield runner, openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)


def _follow_up(call) -> list:
    return [{"role": "user", "content": ASKED},
            {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": "22 degrees, sunny"}]


def test_a_function_call_round_trip(tool_client) -> None:
    runner, client = tool_client
    first = client.responses.create(model="tiny-tools", input=ASKED, tools=[WEATHER])
    [call] = first.output
    assert (call.type, call.name, call.arguments) == ("function_call", "get_weather", '{"city": "Paris"}')
    final = client.responses.create(model="tiny-tools", input=_follow_up(call), tools=[WEATHER])
    assert final.output_text == FINAL_ANSWER
    assert "<tool_response>\n22 degrees, sunny\n</tool_response>" in runner.prompts[1]


def test_a_streamed_function_call_round_trip(tool_client) -> None:
    runner, client = tool_client
    events = list(client.responses.create(model="tiny-tools", input=ASKED, tools=[WEATHER], stream=True))
    names = [e.type for e in events]
    assert names == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.function_call_arguments.delta", "response.function_call_arguments.done",
                     "response.output_item.done", "response.completed"]
    [call] = events[-1].response.output
    assert events[3].delta == call.arguments == '{"city": "Paris"}' and events[2].item.call_id == call.call_id
    final = list(client.responses.create(model="tiny-tools", input=_follow_up(call), tools=[WEATHER], stream=True))
    assert final[-1].response.output_text == FINAL_ANSWER
