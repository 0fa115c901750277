"""Custom (freeform) tools in chat completions as in Responses: their grammar read from either API's shape (Lark or a
regular expression), offered to the model, their input held to that grammar, and their call returned in chat
completions' own custom call shape, whole and streamed, through the real `openai` client on the tiny tool model."""

from __future__ import annotations

import json
import re

import openai
import pytest

from engine.decoding.constraint import grammar_problem
from engine.serving.custom_tools import lark_grammar
from engine.serving.openai_api import parse_request
from tests.engine.serving.scripted import GREEDY, ScriptedRunner, serving

BOUNDED_PATCH = 'start: "*** Begin Patch\\n" ("+" WORD "\\n")~1..3 "*** End Patch"\nWORD: /[a-z]{1,8}/'
PATCH_PATTERN = r"\*\*\* Begin Patch\n(\+[a-z]{1,8}\n){1,3}\*\*\* End Patch"
CHAT_PATCH_TOOL = {"type": "custom", "custom": {"name": "apply_patch", "description": "Edit files.", "format": {
    "type": "grammar", "grammar": {"syntax": "lark", "definition": BOUNDED_PATCH}}}}
DATE = r"20[0-9]{2}/(0[1-9]|1[0-2])/[0-2][0-9]"  # a slash, which a Lark regex literal must escape
CHAT_DATE_TOOL = {"type": "custom", "custom": {"name": "set_date", "format": {
    "type": "grammar", "grammar": {"syntax": "regex", "definition": DATE}}}}
ASK = [{"role": "user", "content": "Add a line."}]


def test_a_grammar_is_read_from_either_apis_shape() -> None:
    assert lark_grammar({"type": "grammar", "syntax": "lark", "definition": BOUNDED_PATCH}) == BOUNDED_PATCH  # Responses
    assert lark_grammar(CHAT_PATCH_TOOL["custom"]["format"]) == BOUNDED_PATCH  # chat completions
    assert lark_grammar({"type": "text"}) is None and lark_grammar(None) is None


def test_a_regex_is_the_lark_grammar_of_one_terminal_that_matches_what_it_matches() -> None:
    lark = lark_grammar(CHAT_DATE_TOOL["custom"]["format"])
    assert grammar_problem(lark) is None
    assert lark_grammar({"type": "grammar", "syntax": "regex", "definition": "a\\/b/c\nd"}) == "start: /a\\/b\\/c\\nd/"


def test_a_chat_request_offers_a_custom_tool_as_a_function_of_one_string_and_may_name_it() -> None:
    body = {"messages": ASK, "tools": [CHAT_PATCH_TOOL], "tool_choice": {"type": "custom", "custom": {"name": "apply_patch"}}}
    tooling = parse_request(body, "chat", ["tiny-tools"], GREEDY).tooling
    parameters = tooling.tools[0]["function"]["parameters"]
    about = parameters["properties"]["input"]["description"]
    assert parameters["required"] == ["input"] and about.endswith("*** Begin Patch\n+x\n*** End Patch")
    assert tooling.freeform == {"apply_patch": BOUNDED_PATCH}
    assert (tooling.choice.mode, tooling.choice.name) == ("named", "apply_patch")


@pytest.fixture(scope="module")
def client(tool_engine):
    with serving(tool_engine) as base:
        yield openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0), tool_engine.model_ids()[0]


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_a_named_custom_tools_input_follows_its_grammar_in_chat_completions(client, temperature) -> None:
    """Random weights left free write any text: every input here is the grammar's, the same with and without
    speculation when greedy, in the API's custom call shape."""
    oa, model = client
    inputs = []
    for mode in ("standard", "speculative"):
        answer = oa.chat.completions.create(model=model, messages=ASK, tools=[CHAT_PATCH_TOOL], max_tokens=80,
                                            tool_choice={"type": "custom", "custom": {"name": "apply_patch"}},
                                            temperature=temperature, extra_body={"mode": mode, "seed": 3}).choices[0]
        [call] = answer.message.tool_calls
        assert (call.type, call.custom.name, answer.finish_reason) == ("custom", "apply_patch", "tool_calls")
        assert re.fullmatch(PATCH_PATTERN, call.custom.input)
        inputs.append(call.custom.input)
    assert temperature > 0 or inputs[0] == inputs[1]


def test_a_regex_grammar_holds_a_custom_tools_input_too(client) -> None:
    oa, model = client
    for seed in range(3):
        [call] = oa.chat.completions.create(model=model, messages=ASK, tools=[CHAT_PATCH_TOOL, CHAT_DATE_TOOL],
                                            tool_choice={"type": "custom", "custom": {"name": "set_date"}}, max_tokens=40,
                                            temperature=0.8, seed=seed).choices[0].message.tool_calls
        assert call.type == "custom" and call.custom.name == "set_date" and re.fullmatch(DATE, call.custom.input)


def test_required_calls_to_custom_tools_follow_their_grammars(client) -> None:
    oa, model = client
    for seed in range(4):
        [call] = oa.chat.completions.create(model=model, messages=ASK, tools=[CHAT_DATE_TOOL, CHAT_PATCH_TOOL],
                                            tool_choice="required", max_tokens=80, temperature=0.8,
                                            seed=seed).choices[0].message.tool_calls
        assert call.type == "custom"
        assert re.fullmatch(PATCH_PATTERN if call.custom.name == "apply_patch" else DATE, call.custom.input)


def test_a_custom_call_streams_as_its_name_then_its_input(client) -> None:
    """OpenAI streams a custom call as a delta with its index, id, type and name, then its input; the client keeps
    the `custom` field it has no type for as the delta's extra."""
    oa, model = client
    chunks = list(oa.chat.completions.create(model=model, messages=ASK, tools=[CHAT_PATCH_TOOL], max_tokens=80, stream=True,
                                             tool_choice={"type": "custom", "custom": {"name": "apply_patch"}}))
    deltas = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    head, rest = [d.model_dump(exclude_none=True) for d in deltas]
    assert head["type"] == "custom" and head["custom"] == {"name": "apply_patch", "input": ""} and head["id"]
    assert re.fullmatch(PATCH_PATTERN, rest["custom"]["input"]) and rest["index"] == head["index"] == 0
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_an_earlier_custom_call_reaches_the_template_and_the_answer_goes_on(tool_target) -> None:
    """The history as a client sends it back: the call in chat completions' custom shape, then its result."""
    patch = "*** Begin Patch\n+bye\n*** End Patch"
    runner = ScriptedRunner(tool_target.tokenizer, ["Done."])
    history = [*ASK, {"role": "assistant", "tool_calls": [{"id": "c1", "type": "custom",
                                                            "custom": {"name": "apply_patch", "input": patch}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "Applied."}]
    with serving(runner) as url:
        oa = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        answer = oa.chat.completions.create(model="tiny-tools", messages=history, tools=[CHAT_PATCH_TOOL])
    assert answer.choices[0].message.content == "Done."
    assert json.dumps({"name": "apply_patch", "arguments": {"input": patch}}) in runner.prompts[0]
