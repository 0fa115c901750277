"""A chat completions request's messages as templates read them: earlier calls in both of OpenAI's shapes (a
function's arguments as an object, a custom tool's input as the function of one string it was offered as)."""

from __future__ import annotations

import pytest

from engine.serving.api_error import ApiError
from engine.serving.chat_messages import chat_messages

PATCH = "*** Begin Patch\n+bye\n*** End Patch"


def _turn(call: dict) -> dict:
    return {"messages": [{"role": "user", "content": "Add bye."}, {"role": "assistant", "content": None, "tool_calls": [call]}]}


def test_earlier_calls_of_both_kinds_reach_the_template_as_function_calls() -> None:
    function = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    custom = {"id": "c2", "type": "custom", "custom": {"name": "apply_patch", "input": PATCH}}
    assert chat_messages(_turn(function))[1]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    assert chat_messages(_turn(custom))[1]["tool_calls"] == [
        {"id": "c2", "type": "function", "function": {"name": "apply_patch", "arguments": {"input": PATCH}}}]


@pytest.mark.parametrize("call, problem", [
    ({"id": "c1", "type": "custom", "custom": {"name": "apply_patch"}}, "needs its 'input' text"),
    ({"id": "c1", "type": "custom", "function": {"name": "apply_patch"}}, "needs a 'custom' object"),
    ({"id": "c1", "type": "function"}, "needs a 'function' object"),
])
def test_a_malformed_earlier_call_is_refused_by_where_it_stands(call, problem) -> None:
    with pytest.raises(ApiError) as refused:
        chat_messages(_turn(call))
    assert refused.value.status == 400 and refused.value.message == f"messages[1].tool_calls[0] {problem}."
