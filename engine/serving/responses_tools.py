"""The tools of a Responses request, as Codex sends them, and the call items they come back as.

Codex offers `function` tools, freeform `custom` tools (apply_patch: the model writes the patch itself, its
syntax given as a Lark grammar) and tools it expects the provider to run (`web_search`, and `namespace` groups of
sub-agent tools), in the request's `tools` or, for the models its catalog puts in code mode, in an
`additional_tools` item of its input. A function is offered as it is; a custom tool as chat completions' are
(`custom_tools`), its call coming back as a `custom_tool_call` item carrying its input text. The rest cannot run
here: they are left out with a note (`LeftOut`) instead of refusing a request Codex sends on every turn.
"""

from __future__ import annotations

from typing import Any

from .api_error import ApiError
from .custom_tools import call_input, custom_tool, grammars, history_custom_call
from .openai_api import one_call, read_tools
from .pieces import ToolCall
from .tool_calls import LeftOut, Tool, ToolChoice, Tooling, function_tool


def tooling(body: dict[str, Any]) -> Tooling | None:
    """The request's tools and choice; None when it offers none."""
    groups, choice = offered(body), body.get("tool_choice")
    if not groups and choice in (None, "auto", "none"):
        return None
    converted: list[Tool] = []
    left_out: tuple[str, ...] = ()
    for where, tools in groups or [("tools", [])]:  # none, yet a call asked for: read_tools says what is missing
        read, skipped = read_tools(tools, _tool, f"{where}[{{}}]".format, "{type: 'function', name, parameters}")
        converted, left_out = converted + read, left_out + skipped
    specs = [t for _, tools in groups for t in tools if isinstance(t, dict) and t.get("type") == "custom"]
    return Tooling(converted, _choice(choice, [t["function"]["name"] for t in converted]), left_out, grammars(specs), one_call(body))


def offered(body: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    """Where the request's tools are, and each list: its `tools`, then each `additional_tools` input item's (Codex
    sends its tools that way for the models its catalog puts in code mode)."""
    items = body.get("input")
    groups: list[tuple[str, list[Any]]] = [("tools", body["tools"])] if body.get("tools") else []
    return groups + [(f"input[{i}].tools", item["tools"]) for i, item in enumerate(items if isinstance(items, list) else [])
                     if isinstance(item, dict) and item.get("type") == "additional_tools" and item.get("tools")]


def _tool(tool: object) -> Tool:
    if not isinstance(tool, dict):
        raise ValueError("must be {type: 'function', name, parameters}")
    if tool.get("type") == "custom":
        return custom_tool(tool)
    if tool.get("type") != "function":
        name = tool.get("name") or tool.get("type")
        raise LeftOut(f"{name} (a {tool.get('type')!r} tool, which this server cannot run)")
    return function_tool(tool.get("name"), tool.get("description"), tool.get("parameters"))


def _choice(choice: object, names: list[str]) -> ToolChoice:
    if choice is None or choice in ("auto", "none", "required"):
        return ToolChoice(choice or "auto")
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom") and choice.get("name") in names:
        return ToolChoice("named", choice["name"])
    raise ApiError(400, "'tool_choice' must be 'auto', 'none', 'required' or {type: 'function', name} naming one of "
                   f"the tools ({', '.join(names)}).", param="tool_choice")


def history_custom(item: dict[str, Any], index: int) -> dict[str, Any]:
    """An earlier `custom_tool_call` item as the function call the template was shown."""
    try:
        return history_custom_call(item.get("call_id"), item.get("name"), item.get("input"))
    except ValueError as e:
        raise ApiError(400, f"input[{index}] (a custom_tool_call) {e}.", param=f"input[{index}]") from e


def call_item(call: ToolCall, tooling: Tooling | None) -> dict[str, Any]:
    """A call as its output item: a custom tool's as `custom_tool_call` with its input text, else `function_call`."""
    if tooling is not None and call.name in tooling.freeform:
        return {"type": "custom_tool_call", "id": "ctc_" + call.id.removeprefix("call_"), "call_id": call.id,
                "name": call.name, "input": call_input(call), "status": "completed"}
    return {"type": "function_call", "id": "fc_" + call.id.removeprefix("call_"), "call_id": call.id, "name": call.name,
            "arguments": call.arguments, "status": "completed"}
