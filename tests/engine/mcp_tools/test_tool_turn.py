"""A tool turn on the tiny tool model's real tokenizer and chat template, against the demo FastMCP server."""

import sys

import pytest

from engine.decoding.prompt_ids import prompt_token_ids
from engine.mcp_tools.hub import McpHub, ToolOutcome
from engine.mcp_tools.saved_calls import AnswerCalls, CallRecord
from engine.mcp_tools.servers_config import ServerConfig
from engine.mcp_tools.tool_turn import Permissions, calls_in, refusal
from engine.serving.pieces import ToolCall
from tests.engine.mcp_tools.test_hub import DEMO


@pytest.fixture(scope="module")
def hub():
    hub = McpHub([ServerConfig("demo", command=sys.executable, args=(DEMO,))], timeout=30)
    hub.start()
    yield hub
    hub.close()


def test_a_call_in_the_models_envelope_or_bare_is_found_and_an_unoffered_name_stays_text(tool_target, hub):
    tools = [tool.as_template_tool() for tool in hub.tools]
    tokenizer = tool_target.tokenizer
    text, calls = calls_in(tokenizer, tools, 'Let me add.<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>')
    assert text == "Let me add." and [(c.name, c.arguments_object()) for c in calls] == [("add", {"a": 2, "b": 3})]
    _, bare = calls_in(tokenizer, tools, '{"name": "add", "arguments": {"a": 1, "b": 1}}')
    assert [c.name for c in bare] == ["add"]
    text, none = calls_in(tokenizer, tools, '{"name": "rm_rf", "arguments": {}}')
    assert none == [] and "rm_rf" in text


def test_permission_once_asks_again_always_does_not_and_deny_runs_nothing(hub):
    permissions, call = Permissions(), ToolCall("add", '{"a": 1, "b": 2}')
    assert permissions.needs_asking(call) and permissions.decide(call, "once")
    assert permissions.needs_asking(call)
    assert permissions.decide(call, "always") and not permissions.needs_asking(call)
    denied = refusal(ToolCall("hang", "{}"), allowed=permissions.decide(ToolCall("hang", "{}"), "deny"))
    assert denied is not None and denied.is_error and "The user denied the call to hang" in denied.text


def test_bad_arguments_come_back_to_the_model_as_an_error(hub):
    outcome = refusal(ToolCall("add", "{nope"), allowed=True)
    assert outcome is not None and outcome.is_error and "not valid JSON" in outcome.text
    assert refusal(ToolCall("add", '{"a": 1, "b": 2}'), allowed=True) is None


def test_the_result_goes_back_as_a_tool_message_the_template_renders(tool_target, hub):
    outcome = hub.call("add", {"a": 2, "b": 40})
    assert outcome == ToolOutcome("42")
    calls = AnswerCalls("", [CallRecord("call_1", "add", '{"a": 2, "b": 40}', "demo", "done", outcome.text)])
    messages = [{"role": "user", "content": "2+40?"}, *calls.messages({"role": "assistant", "content": "raw"})]
    assert messages[1]["tool_calls"][0]["function"] == {"name": "add", "arguments": {"a": 2, "b": 40}}
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "name": "add", "content": "42"}
    tokenizer = tool_target.tokenizer
    prompt = tokenizer.decode(prompt_token_ids(tokenizer, messages, chat=True, tools=[t.as_template_tool() for t in hub.tools]))
    assert '"name": "add"' in prompt and "42" in prompt.split("2+40?")[1]
