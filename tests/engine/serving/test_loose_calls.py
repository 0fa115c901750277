"""Calls written without the template's envelope: each form models emit, streamed token by token and whole, on the
tiny tool model's tokenizer; and through the server on all three APIs."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from engine.serving.loose_calls import LooseCalls
from engine.serving.pieces import TextPiece, ToolCall
from engine.serving.tool_calls import ToolCallMissing, ToolChoice, Tooling, function_tool
from tests.engine.serving.scripted import ScriptedRunner, serving
from tests.engine.serving.test_tool_calls import token_texts

WEATHER = function_tool("get_weather", "The weather in a city", {"type": "object", "properties": {"city": {"type": "string"}}})
TIME = function_tool("get_time", "The time in a city", {"type": "object", "properties": {"city": {"type": "string"}}})
PARIS = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
OSLO = '{"name": "get_time", "parameters": {"city": "Oslo"}}'

FORMS = {
    "bare object": (PARIS, [("get_weather", {"city": "Paris"})], ""),
    "fence after prose": (f"Sure.\n```json\n{PARIS}\n```", [("get_weather", {"city": "Paris"})], "Sure."),
    "plain fence": (f"```\n{PARIS}\n```\n", [("get_weather", {"city": "Paris"})], ""),
    "tools tags": (f"<tools>\n{PARIS}\n</tools>", [("get_weather", {"city": "Paris"})], ""),
    "function tags": (f"<function>{PARIS}</function>", [("get_weather", {"city": "Paris"})], ""),
    "function=name tag": ('<function=get_time>{"city": "Oslo"}</function>', [("get_time", {"city": "Oslo"})], ""),
    "array of calls": (f"[{PARIS}, {OSLO}]", [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Oslo"})], ""),
    "arguments as text": ('{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}', [("get_weather", {"city": "Paris"})], ""),
    "openai's function object": ('{"type": "function", "function": ' + PARIS + "}", [("get_weather", {"city": "Paris"})], ""),
}
NOT_CALLS = {
    "an unoffered name": '{"name": "delete_everything", "arguments": {}}',
    "an array with one unoffered name": f'[{PARIS}, {{"name": "rm", "arguments": {{}}}}]',
    "arguments not an object": '{"name": "get_weather", "arguments": 3}',
    "json that is not a call": '{"city": "Paris"}',
    "a fence of code": "```python\nprint('hi')\n```",
    "prose then bare json": f"The call would be {PARIS}",
    "an unclosed fence": f"```json\n{PARIS}",
    "prose with a brace": "Use {braces} for sets.",
}


AUTO_CHOICE = ToolChoice()


def run(tokenizer, text: str, streamed: bool, tools=(WEATHER, TIME), choice=AUTO_CHOICE) -> list:
    splitter = Tooling(list(tools), choice).splitter(tokenizer)
    chunks = token_texts(tokenizer, text) if streamed else [text]
    return [p for chunk in chunks for p in splitter.feed(chunk)] + splitter.finish()


def calls(pieces: list) -> list[tuple[str, dict]]:
    return [(p.name, json.loads(p.arguments)) for p in pieces if isinstance(p, ToolCall)]


def text(pieces: list) -> str:
    return "".join(p.text for p in pieces if isinstance(p, TextPiece))


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("form", FORMS)
def test_each_form_becomes_its_calls(tool_target, form, streamed) -> None:
    written, expected, rest = FORMS[form]
    pieces = run(tool_target.tokenizer, written, streamed)
    assert (calls(pieces), text(pieces)) == (expected, rest)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("case", NOT_CALLS)
def test_what_is_not_a_call_to_an_offered_tool_stays_text(tool_target, case, streamed) -> None:
    pieces = run(tool_target.tokenizer, NOT_CALLS[case], streamed)
    assert (calls(pieces), text(pieces)) == ([], NOT_CALLS[case])


def test_a_named_choice_takes_only_its_own_tool(tool_target) -> None:
    named = ToolChoice("named", "get_time")
    assert calls(run(tool_target.tokenizer, OSLO, True, choice=named)) == [("get_time", {"city": "Oslo"})]
    with pytest.raises(ToolCallMissing):
        run(tool_target.tokenizer, PARIS, True, choice=named)


def test_prose_streams_at_once_and_only_a_possible_form_is_held() -> None:
    loose = LooseCalls({"get_weather"})
    assert loose.feed("It is ") == [TextPiece("It is ")]
    assert loose.feed("sunny. `") == [TextPiece("sunny. ")]  # a backtick may open a fence
    assert loose.feed("x` done") == [TextPiece("`x` done")]
    assert loose.feed("\n```json\n{") == [TextPiece("\n")] and loose.finish() == [TextPiece("```json\n{")]


BARE = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


def test_a_bare_call_is_a_call_on_all_three_apis_whole_and_streamed(tool_target) -> None:
    runner = ScriptedRunner(tool_target.tokenizer, [BARE] * 6)
    tool = {"type": "function", "function": WEATHER["function"]}
    with serving(runner) as url:
        oa = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        ask = [{"role": "user", "content": "Weather in Paris?"}]
        chat = oa.chat.completions.create(model="tiny-tools", messages=ask, tools=[tool])
        assert chat.choices[0].finish_reason == "tool_calls" and chat.choices[0].message.tool_calls[0].function.name == "get_weather"
        chunks = list(oa.chat.completions.create(model="tiny-tools", messages=ask, tools=[tool], stream=True))
        assert any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
        flat = {"type": "function", **WEATHER["function"]}
        assert oa.responses.create(model="tiny-tools", input="Weather?", tools=[flat]).output[0].type == "function_call"
        streamed = list(oa.responses.create(model="tiny-tools", input="Weather?", tools=[flat], stream=True))
        assert streamed[-1].response.output[0].type == "function_call"
        an = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
        anthropic_tool = {"name": "get_weather", "input_schema": WEATHER["function"]["parameters"]}
        message = an.messages.create(model="tiny-tools", max_tokens=99, messages=ask, tools=[anthropic_tool])
        assert (message.stop_reason, message.content[-1].input) == ("tool_use", {"city": "Paris"})
        with an.messages.stream(model="tiny-tools", max_tokens=99, messages=ask, tools=[anthropic_tool]) as stream:
            assert stream.get_final_message().content[-1].type == "tool_use"
