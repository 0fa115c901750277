"""The tools of a Responses request as Codex sends them: functions kept, custom tools offered as one string,
built-in tools left out with a note; and a custom tool's call coming back as a `custom_tool_call` item."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from engine.serving.api_error import ApiError
from engine.serving.pieces import ToolCall
from engine.serving.responses_api import parse_request
from engine.serving.responses_tools import call_item
from tests.engine.serving.scripted import FINAL_ANSWER, GREEDY, ScriptedRunner, serving

FIXTURES = Path(__file__).parent / "fixtures"
PATCH_GRAMMAR = 'start: "*** Begin Patch\\n" LINE* "*** End Patch"\nLINE: /[^\\n]*\\n/'
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "description": "Edit files with a patch.",
               "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR}}
PATCH = "*** Begin Patch\n+bye\n*** End Patch"


def parse(body: dict):
    return parse_request(body, ["tiny-tools"], GREEDY)


def test_codexs_recorded_request_keeps_its_functions_and_leaves_out_the_rest_with_a_note() -> None:
    """Codex CLI 0.171's own body (recorded against a capturing server): developer messages, eight functions, a
    `namespace` of sub-agent tools and `web_search`."""
    body = json.loads((FIXTURES / "codex_responses.json").read_text())
    request = parse_request(body, [body["model"]], GREEDY)
    functions = [t["name"] for t in body["tools"] if t["type"] == "function"]
    assert [t["function"]["name"] for t in request.tooling.tools] == functions
    assert [note.split(" ")[0] for note in request.tooling.left_out] == ["multi_agent_v1", "web_search"]
    assert [m["role"] for m in request.prompt] == ["system", "system", "user", "user"]


def test_parallel_tool_calls_false_asks_for_one_call_and_the_response_says_so() -> None:
    from engine.serving.responses_api import Render

    request = parse({"tools": [APPLY_PATCH], "input": "Fix it.", "parallel_tool_calls": False})
    created = json.loads(Render(request).opening(5, 0)[0].split(b"data: ", 1)[1])
    assert request.tooling.one_call and created["response"]["parallel_tool_calls"] is False
    assert not parse({"tools": [APPLY_PATCH], "input": "Fix it."}).tooling.one_call


def test_tools_in_an_additional_tools_item_are_offered_beside_the_tools_field() -> None:
    """Codex sends its tools in an `additional_tools` input item for the models its catalog puts in code mode."""
    get_time = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
    group = {"type": "namespace", "name": "functions", "tools": [get_time]}
    request = parse({"tools": [APPLY_PATCH], "input": [
        {"type": "additional_tools", "role": "developer", "tools": [get_time, group]},
        {"role": "user", "content": "What time is it?"}]})
    assert [t["function"]["name"] for t in request.tooling.tools] == ["apply_patch", "get_time"]
    assert [note.split(" ")[0] for note in request.tooling.left_out] == ["functions"]
    assert request.tooling.freeform == {"apply_patch": PATCH_GRAMMAR}
    assert request.prompt == [{"role": "user", "content": "What time is it?"}]


def test_an_additional_tools_item_without_a_list_of_tools_is_refused_naming_it() -> None:
    with pytest.raises(ApiError) as refused:
        parse({"input": [{"role": "user", "content": "Hi"}, {"type": "additional_tools", "tools": "get_time"}]})
    assert (refused.value.status, refused.value.param) == (400, "input[1].tools")


def test_a_custom_tool_is_offered_as_a_function_of_one_string_with_an_example_of_its_text() -> None:
    tooling = parse({"input": "Hi", "tools": [APPLY_PATCH]}).tooling
    parameters = tooling.tools[0]["function"]["parameters"]
    about = parameters["properties"]["input"]["description"]
    assert parameters["required"] == ["input"] and about.endswith("for example:\n*** Begin Patch\n*** End Patch")
    assert tooling.freeform == {"apply_patch": PATCH_GRAMMAR}


def test_an_earlier_custom_call_and_its_output_reach_the_template_as_a_call_and_its_result() -> None:
    prompt = parse({"input": [{"role": "user", "content": "Add bye."},
                              {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": PATCH},
                              {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done."}]}).prompt
    assert prompt[1]["tool_calls"][0]["function"] == {"name": "apply_patch", "arguments": {"input": PATCH}}
    assert prompt[2] == {"role": "tool", "tool_call_id": "c1", "content": "Done."}


def test_a_custom_tools_call_is_a_custom_tool_call_item_with_its_input_text() -> None:
    tooling = parse({"input": "Hi", "tools": [APPLY_PATCH]}).tooling
    item = call_item(ToolCall("apply_patch", json.dumps({"input": PATCH}), "call_1"), tooling)
    assert (item["type"], item["call_id"], item["input"]) == ("custom_tool_call", "call_1", PATCH)


def test_a_custom_call_round_trip_through_the_server_with_a_warning_for_what_was_left_out(tool_target) -> None:
    call = '<tool_call>\n' + json.dumps({"name": "apply_patch", "arguments": {"input": PATCH}}) + '\n</tool_call>'
    runner = ScriptedRunner(tool_target.tokenizer, [call, call, FINAL_ANSWER])
    tools = [APPLY_PATCH, {"type": "web_search"}]
    with serving(runner) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        [item] = client.responses.create(model="tiny-tools", input="Add bye.", tools=tools).output
        assert (item.type, item.name, item.input) == ("custom_tool_call", "apply_patch", PATCH)
        events = list(client.responses.create(model="tiny-tools", input="Add bye.", tools=tools, stream=True))
        assert [e.type for e in events][3:5] == ["response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"]
        raw = httpx.post(url + "/v1/responses", json={"input": "Add bye.", "tools": tools}, timeout=30)
        assert "web_search" in raw.headers["x-specchat-warning"]
