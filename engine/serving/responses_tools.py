"""The tools of a Responses request, as Codex sends them, and the call items they come back as.

Codex offers `function` tools, freeform `custom` tools (apply_patch: the model writes the patch itself, its
syntax given as a Lark grammar) and tools it expects the provider to run (`web_search`, and `namespace` groups of
sub-agent tools). A function is offered as it is. A custom tool is offered to the chat template as a function
taking one string, `input` (templates only know functions), its grammar in the description; its call comes back
as a `custom_tool_call` item carrying that string. The rest cannot run here: they are left out with a note
(`LeftOut`) instead of refusing a request Codex sends on every turn.
"""

from __future__ import annotations

import json
from typing import Any

from .api_error import ApiError
from .openai_api import read_tools
from .pieces import ToolCall
from .tool_calls import LeftOut, Tool, ToolChoice, Tooling, function_tool, history_call

FREEFORM_INPUT = "input"  # the one argument a custom tool is offered with


def tooling(body: dict[str, Any]) -> Tooling | None:
    """The request's tools and choice; None when it offers none."""
    tools, choice = body.get("tools"), body.get("tool_choice")
    if not tools and choice in (None, "auto", "none"):
        return None
    converted, left_out = read_tools(tools, _tool, lambda i: f"tools[{i}]", "{type: 'function', name, parameters}")
    freeform = {t["name"]: _lark(t) for t in tools if isinstance(t, dict) and t.get("type") == "custom"}  # type: ignore[union-attr]
    return Tooling(converted, _choice(choice, [t["function"]["name"] for t in converted]), left_out, freeform)


def _tool(tool: object) -> Tool:
    if not isinstance(tool, dict):
        raise ValueError("must be {type: 'function', name, parameters}")
    if tool.get("type") == "custom":
        return _custom(tool)
    if tool.get("type") != "function":
        name = tool.get("name") or tool.get("type")
        raise LeftOut(f"{name} (a {tool.get('type')!r} tool, which this server cannot run)")
    return function_tool(tool.get("name"), tool.get("description"), tool.get("parameters"))


def _custom(tool: dict[str, Any]) -> Tool:
    """A freeform tool as a function of one string, its grammar (if any) shown to the model."""
    grammar = _lark(tool)
    about = "The tool's whole input, as free text" + (f", following this Lark grammar:\n{grammar}" if grammar else ".")
    parameters = {"type": "object", "properties": {FREEFORM_INPUT: {"type": "string", "description": about}},
                  "required": [FREEFORM_INPUT]}
    return function_tool(tool.get("name"), tool.get("description"), parameters)


def _lark(tool: dict[str, Any]) -> str | None:
    """A custom tool's Lark grammar ({type: 'grammar', syntax: 'lark', definition}); None for free text."""
    form = tool.get("format")
    if isinstance(form, dict) and form.get("type") == "grammar" and form.get("syntax", "lark") == "lark":
        definition = form.get("definition")
        return definition if isinstance(definition, str) and definition else None
    return None


def _choice(choice: object, names: list[str]) -> ToolChoice:
    if choice is None or choice in ("auto", "none", "required"):
        return ToolChoice(choice or "auto")
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom") and choice.get("name") in names:
        return ToolChoice("named", choice["name"])
    raise ApiError(400, "'tool_choice' must be 'auto', 'none', 'required' or {type: 'function', name} naming one of "
                   f"the tools ({', '.join(names)}).", param="tool_choice")


def history_custom_call(item: dict[str, Any], index: int) -> dict[str, Any]:
    """An earlier `custom_tool_call` item as the function call the template was shown."""
    text = item.get("input")
    if not isinstance(text, str):
        raise ApiError(400, f"input[{index}] (a custom_tool_call) needs its 'input' text.", param=f"input[{index}]")
    return history_call(item.get("call_id"), item.get("name"), {FREEFORM_INPUT: text})


def call_item(call: ToolCall, tooling: Tooling | None) -> dict[str, Any]:
    """A call as its output item: a custom tool's as `custom_tool_call` with its input text, else `function_call`."""
    if tooling is not None and call.name in tooling.freeform:
        text = call.arguments_object().get(FREEFORM_INPUT, "")
        return {"type": "custom_tool_call", "id": "ctc_" + call.id.removeprefix("call_"), "call_id": call.id,
                "name": call.name, "input": text if isinstance(text, str) else json.dumps(text), "status": "completed"}
    return {"type": "function_call", "id": "fc_" + call.id.removeprefix("call_"), "call_id": call.id, "name": call.name,
            "arguments": call.arguments, "status": "completed"}
