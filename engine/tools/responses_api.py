"""OpenAI's Responses API (`POST /v1/responses`, what Codex speaks) as a translation at the edge.

A request's `instructions` and `input` (a string, or items: messages, `function_call`, `function_call_output`)
become the chat messages our templates read, its function tools the OpenAI-shaped tools they take; the answer
comes back as output items (a message with `output_text`, a `function_call` per call), or streamed as
Responses streams it: response.created, response.in_progress, then per item response.output_item.added, its
deltas (response.output_text.delta, response.function_call_arguments.delta) and its .done events, and last
response.completed (response.incomplete when the token limit cut it). Every event carries a sequence_number.

Nothing is stored: `previous_response_id` is refused (send the whole input each turn, as Codex does with
store=false). Errors are OpenAI's shape. Reasoning items in the input are dropped, none are produced yet: that
is the reasoning splitter's seam (engine/decoding/reasoning.py).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from ..params import GenerationParams
from .openai_api import ApiError, ApiRequest, read_tools, request_params, served_model, typed
from .response_format import responses_schema
from .speculation_report import speculation
from .tool_calls import Piece, Reply, TextPiece, Tool, ToolCall, ToolChoice, Tooling, function_tool, history_call

MESSAGE_ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text", "text")
IGNORED_ITEMS = ("reasoning",)


def parse_request(body: dict[str, Any], models: list[str], defaults: GenerationParams) -> ApiRequest:
    """A Responses body as the job every API makes."""
    model = served_model(body, models)
    if body.get("previous_response_id") is not None:
        raise ApiError(400, "previous_response_id is not supported: this server stores no responses. Send the whole "
                       "conversation as 'input' each turn.", param="previous_response_id")
    instructions = typed(body, "instructions", str, None)
    messages = ([{"role": "system", "content": instructions}] if instructions else []) + _input(body.get("input"))
    translated = {**body, "max_tokens": body.get("max_output_tokens"), "stop": None}
    try:
        params = request_params(translated, defaults)
    except ApiError as e:
        raise ApiError(e.status, e.message.replace("'max_tokens'", "'max_output_tokens'"), e.kind,
                       "max_output_tokens" if e.param == "max_tokens" else e.param, e.code) from None
    params = params.replace(json_schema=responses_schema(body))
    echo = {"instructions": instructions, "max_output_tokens": body.get("max_output_tokens"),
            "tools": body.get("tools") or [], "tool_choice": body.get("tool_choice") or "auto",
            "temperature": params.temperature, "top_p": params.top_p}
    return ApiRequest("responses", model, messages, params, typed(body, "stream", bool, False), tooling=_tooling(body),
                      echo=echo)


def _input(items: object) -> list[dict[str, Any]]:
    if isinstance(items, str) and items:
        return [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise ApiError(400, "'input' is required: a non-empty string or a list of input items.", param="input")
    messages: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ApiError(400, f"input[{i}] must be an object.", param=f"input[{i}]")
        kind = item.get("type", "message")
        if kind == "message":
            messages.append(_message(item, i))
        elif kind == "function_call":
            _add_call(messages, item, i)
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id", "")), "content": _text(output, i)})
        elif kind not in IGNORED_ITEMS:
            raise ApiError(400, f"input[{i}] has type {kind!r}, which is not supported here (message, function_call and "
                           "function_call_output are).", param=f"input[{i}].type")
    return messages


def _message(item: dict[str, Any], index: int) -> dict[str, Any]:
    role = item.get("role")
    if role not in MESSAGE_ROLES:
        raise ApiError(400, f"input[{index}].role must be one of {', '.join(MESSAGE_ROLES)}.", param=f"input[{index}].role")
    return {"role": "system" if role == "developer" else role, "content": _text(item.get("content"), index)}


def _text(content: object, index: int) -> str:
    """A string, or text parts (input_text / output_text) joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") in TEXT_PARTS for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise ApiError(400, f"input[{index}].content must be text (a string or input_text parts).", param=f"input[{index}].content")


def _add_call(messages: list[dict[str, Any]], item: dict[str, Any], index: int) -> None:
    """A function_call item joins the assistant turn before it (calls of one turn are consecutive items)."""
    try:
        call = history_call(item.get("call_id"), item.get("name"), item.get("arguments"))
    except ValueError as e:
        raise ApiError(400, f"input[{index}] (a function_call) {e}.", param=f"input[{index}]") from e
    if messages and messages[-1]["role"] == "assistant":
        messages[-1].setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})


def _tooling(body: dict[str, Any]) -> Tooling | None:
    tools, choice = body.get("tools"), body.get("tool_choice")
    if not tools and choice in (None, "auto", "none"):
        return None
    converted = read_tools(tools, _tool, lambda i: f"tools[{i}]", "{type: 'function', name, parameters}")
    return Tooling(converted, _choice(choice, [t["function"]["name"] for t in converted]))


def _tool(tool: object) -> Tool:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        raise ValueError("must be {type: 'function', name, parameters} (built-in tools are not supported)")
    return function_tool(tool.get("name"), tool.get("description"), tool.get("parameters"))


def _choice(choice: object, names: list[str]) -> ToolChoice:
    if choice is None or choice in ("auto", "none", "required"):
        return ToolChoice(choice or "auto")  # type: ignore[arg-type]
    if isinstance(choice, dict) and choice.get("type") == "function" and choice.get("name") in names:
        return ToolChoice("named", choice["name"])
    raise ApiError(400, "'tool_choice' must be 'auto', 'none', 'required' or {type: 'function', name} naming one of "
                   f"the tools ({', '.join(names)}).", param="tool_choice")


def _usage(reply: Reply) -> dict[str, Any]:
    s = reply.finished.stats
    return {"input_tokens": s.prompt_tokens, "input_tokens_details": {"cached_tokens": s.cached_prompt_tokens},
            "output_tokens": s.generated_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": s.prompt_tokens + s.generated_tokens}


class Render:
    """A Responses response, whole or as the Responses stream of events (one id for all of them)."""

    def __init__(self, request: ApiRequest) -> None:
        self.request = request
        self.id = "resp_" + uuid.uuid4().hex[:24]
        self.created = int(time.time())
        self._sequence = 0
        self._items: list[dict[str, Any]] = []  # output items so far (the open message last while text streams)
        self._open_text: dict[str, Any] | None = None

    def _response(self, status: str, output: list[dict[str, Any]], reply: Reply | None = None) -> dict[str, Any]:
        body = {"id": self.id, "object": "response", "created_at": self.created, "status": status, "error": None,
                "incomplete_details": None, "model": self.request.model, "output": output, "parallel_tool_calls": True,
                "previous_response_id": None, "text": {"format": {"type": "text"}}, "truncation": "disabled",
                "metadata": {}, "usage": None, **self.request.echo}
        if reply is not None:
            cut = reply.finished.finish_reason in ("length", "context")
            body.update(status="incomplete" if cut else "completed", usage=_usage(reply),
                        incomplete_details={"reason": "max_output_tokens"} if cut else None,
                        speculation=speculation(reply.finished, self.request.params.drafter))
        return body

    def whole(self, reply: Reply) -> dict[str, Any]:
        output = ([_message_item(reply.text)] if reply.text or not reply.calls else []) + [_call_item(c) for c in reply.calls]
        return self._response("completed", output, reply)

    def _event(self, kind: str, **fields: Any) -> bytes:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return f"event: {kind}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()

    def opening(self, prompt_tokens: int) -> list[bytes]:
        started = self._response("in_progress", [])
        return [self._event("response.created", response=started), self._event("response.in_progress", response=started)]

    def piece(self, piece: Piece) -> list[bytes]:
        if isinstance(piece, TextPiece):
            return self._text(piece.text) if piece.text else []
        frames = self._close_text()
        item, index = _call_item(piece), len(self._items)
        self._items.append(item)
        return frames + [
            self._event("response.output_item.added", output_index=index, item={**item, "arguments": "", "status": "in_progress"}),
            self._event("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece.arguments),
            self._event("response.function_call_arguments.done", item_id=item["id"], output_index=index, name=piece.name,
                        arguments=piece.arguments),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _text(self, text: str) -> list[bytes]:
        frames = []
        if self._open_text is None:
            self._open_text = _message_item("")
            self._items.append(self._open_text)
            empty = {**self._open_text, "status": "in_progress", "content": []}
            frames += [self._event("response.output_item.added", output_index=len(self._items) - 1, item=empty),
                       self._event("response.content_part.added", content_index=0, part=_text_part(""), **self._where())]
        self._open_text["content"][0]["text"] += text
        return frames + [self._event("response.output_text.delta", content_index=0, delta=text, **self._where())]

    def _where(self) -> dict[str, Any]:
        return {"item_id": self._open_text["id"], "output_index": self._items.index(self._open_text)}  # type: ignore[index]

    def _close_text(self) -> list[bytes]:
        if self._open_text is None:
            return []
        item, where = self._open_text, self._where()
        self._open_text = None
        part = item["content"][0]
        return [self._event("response.output_text.done", content_index=0, text=part["text"], **where),
                self._event("response.content_part.done", content_index=0, part=part, **where),
                self._event("response.output_item.done", output_index=where["output_index"], item=item)]

    def closing(self, reply: Reply) -> list[bytes]:
        frames = self._close_text()
        done = self._response("completed", self._items, reply)
        return frames + [self._event(f"response.{done['status']}", response=done)]

    def failure(self, error: ApiError) -> list[bytes]:
        return [self._event("error", code=error.code, message=error.message, param=error.param)]


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def _message_item(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_" + uuid.uuid4().hex[:24], "status": "completed", "role": "assistant",
            "content": [_text_part(text)]}


def _call_item(call: ToolCall) -> dict[str, Any]:
    return {"type": "function_call", "id": "fc_" + call.id.removeprefix("call_"), "call_id": call.id, "name": call.name,
            "arguments": call.arguments, "status": "completed"}
