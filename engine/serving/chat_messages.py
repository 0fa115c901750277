"""A chat completions request's messages as chat templates read them.

Each message keeps its role (a `developer` message is a system one) and its text (content parts joined; with
`image_url` parts, text and image parts). An assistant turn's earlier `tool_calls` are read in both of OpenAI's
shapes: a function's `{type: "function", function: {name, arguments}}`, its arguments as an object rather than JSON
text, and a custom tool's `{type: "custom", custom: {name, input}}`, as the function of one string it was offered
as (`custom_tools`). A `tool` turn keeps the id of the call it answers.
"""

from __future__ import annotations

from typing import Any

from .api_error import ApiError
from .custom_tools import history_custom_call
from .image_parts import is_image_part, with_image_parts
from .tool_calls import history_call

ROLES = ("system", "user", "assistant", "developer", "tool")


def chat_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat's messages: role and text, content parts joined."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "'messages' is required: a non-empty list of {role, content} objects.", param="messages")
    out = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            raise ApiError(400, f"messages[{i}].role must be one of {', '.join(ROLES)}.", param=f"messages[{i}].role")
        out.append(_message(message, role, i))
    return out


def _message(message: dict[str, Any], role: str, index: int) -> dict[str, Any]:
    """One message as chat templates read it: tool calls with their arguments as objects, results with their id."""
    out: dict[str, Any] = {"role": "system" if role == "developer" else role, "content": _content(message.get("content"), index)}
    calls = message.get("tool_calls")
    if role == "assistant" and calls:
        if not isinstance(calls, list):
            raise ApiError(400, f"messages[{index}].tool_calls must be a list.", param=f"messages[{index}].tool_calls")
        out["tool_calls"] = [_history_call(call, f"messages[{index}].tool_calls[{j}]") for j, call in enumerate(calls)]
    if role == "tool":
        out["tool_call_id"] = str(message.get("tool_call_id") or "")
    return out


def _history_call(call: object, param: str) -> dict[str, Any]:
    """An earlier call, a function's or a custom tool's, as the template reads it."""
    call = call if isinstance(call, dict) else {}
    kind = "custom" if call.get("type") == "custom" else "function"
    body, call_id = call.get(kind), call.get("id")
    try:
        if not isinstance(body, dict):
            raise ValueError(f"needs a '{kind}' object")
        if kind == "custom":
            return history_custom_call(call_id, body.get("name"), body.get("input"))
        return history_call(call_id, body.get("name"), body.get("arguments"))
    except ValueError as e:
        raise ApiError(400, f"{param} {e}.", param=param) from e


def _content(content: object, index: int) -> str | list[dict[str, Any]]:
    """A message's text: a string, or a list of text parts; with `image_url` parts, text and image parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and any(is_image_part(p) for p in content):
        return with_image_parts(content, f"messages[{index}].content", ("text",))
    if content is None:
        return ""
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise ApiError(400, f"messages[{index}].content must be text (a string or text parts).", param=f"messages[{index}].content")
