"""OpenAI's Responses API (`POST /v1/responses`, what Codex speaks) as a translation at the edge.

A request's `instructions` and `input` (a string, or items: messages, `function_call`, `function_call_output`,
`reasoning`, a custom tool's `custom_tool_call` / `custom_tool_call_output`, and `additional_tools`, which offers
tools as `tools` does) become the chat messages our templates read, its tools the OpenAI-shaped tools they take
(`responses_tools`); the answer comes back as output items (a `reasoning` item when the model reasoned, a message
with `output_text`, a `function_call` or `custom_tool_call` per call), or streamed as Responses streams it:
response.created, response.in_progress, then per item response.output_item.added, its deltas
(response.reasoning_text.delta, response.output_text.delta, response.function_call_arguments.delta) and its .done
events, and last response.completed (response.incomplete when the token limit cut it). Every event carries a
sequence_number.

The reasoning is the model's own text, so it goes in the item's `content` as `reasoning_text` (as OpenAI's
gpt-oss server sends it), not in `summary`, which is for a summary we do not write. `reasoning: {"effort":
"none"}` switches thinking off (`reasoning_api`). A reasoning item in the input is the reasoning of the
assistant turn it precedes.

Each response is kept in memory unless the request says `store: false` (as Codex does), so the next request may
name it as `previous_response_id` instead of resending the conversation (`response_store`, bounded). Errors are
OpenAI's shape.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from ..params import GenerationParams
from . import responses_tools
from .image_parts import is_image_part, with_image_parts
from .keepalive import CommentsSuffice
from .openai_api import ApiError, ApiRequest, one_call, request_params, served_model, typed
from .pieces import AnswerPiece, ReasoningPiece, TextPiece
from .reasoning_api import responses_thinks, with_thinking
from .response_format import responses_schema
from .response_store import RECENT
from .responses_tools import call_item, history_custom
from .speculation_report import speculation
from .tool_calls import Reply, history_call

MESSAGE_ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text", "text")
REASONING_PARTS = ("reasoning_text", "summary_text")


def parse_request(body: dict[str, Any], models: list[str], defaults: GenerationParams) -> ApiRequest:
    """A Responses body as the job every API makes."""
    model = served_model(body, models)
    instructions = typed(body, "instructions", str, None)
    history = _previous(typed(body, "previous_response_id", str, None)) + _input(body.get("input"))
    messages = ([{"role": "system", "content": instructions}] if instructions else []) + history
    translated = {**body, "max_tokens": body.get("max_output_tokens"), "stop": None}
    try:
        params = request_params(translated, defaults)
    except ApiError as e:
        raise ApiError(e.status, e.message.replace("'max_tokens'", "'max_output_tokens'"), e.kind,
                       "max_output_tokens" if e.param == "max_tokens" else e.param, e.code) from None
    params = params.replace(json_schema=responses_schema(body))
    echo = {"instructions": instructions, "max_output_tokens": body.get("max_output_tokens"),
            "tools": body.get("tools") or [], "tool_choice": body.get("tool_choice") or "auto",
            "temperature": params.temperature, "top_p": params.top_p, "reasoning": body.get("reasoning"),
            "previous_response_id": body.get("previous_response_id"), "store": typed(body, "store", bool, True),
            "parallel_tool_calls": not one_call(body)}
    return ApiRequest("responses", model, messages, with_thinking(params, responses_thinks(body)),
                      typed(body, "stream", bool, False), tooling=responses_tools.tooling(body), echo=echo)


def _previous(response_id: str | None) -> list[dict[str, Any]]:
    """The conversation a stored response ended (its instructions not carried over), or [] when none is named."""
    if response_id is None:
        return []
    conversation = RECENT.conversation(response_id)
    if conversation is None:
        raise ApiError(400, f"Previous response with id '{response_id}' not found: this server keeps the last "
                       f"{RECENT.max_responses} responses stored with store=true, in memory until it restarts. Send the "
                       "whole conversation as 'input' instead.", param="previous_response_id")
    return conversation


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
            _add_message(messages, item, i)
        elif kind == "function_call":
            _add_call(messages, item, i)
        elif kind == "custom_tool_call":
            _join_call(messages, history_custom(item, i))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id", "")), "content": _text(output, i)})
        elif kind == "reasoning":
            _add_reasoning(messages, item, i)
        elif kind == "additional_tools":
            _check_tools(item, i)  # tools, not a turn: `responses_tools.offered` reads them
        else:
            raise ApiError(400, f"input[{i}] has type {kind!r}, which is not supported here (message, function_call, "
                           "function_call_output, custom_tool_call, custom_tool_call_output, reasoning and "
                           "additional_tools are).", param=f"input[{i}].type")
    return messages


def _check_tools(item: dict[str, Any], index: int) -> None:
    """An additional_tools item must hold a list, so that a bad one is refused naming it, not read as no tools."""
    if not isinstance(item.get("tools"), list):
        raise ApiError(400, f"input[{index}].tools must be a list of tools (an additional_tools item).",
                       param=f"input[{index}].tools")


def _add_reasoning(messages: list[dict[str, Any]], item: dict[str, Any], index: int) -> None:
    """A reasoning item opens the assistant turn it belongs to (its message and calls are the items after it); its
    text is the reasoning's own (`content`), else its summary; one without text (encrypted) adds nothing."""
    parts = item.get("content") or item.get("summary") or []
    if not isinstance(parts, list) or not all(isinstance(p, dict) and p.get("type") in REASONING_PARTS for p in parts):
        raise ApiError(400, f"input[{index}] (a reasoning item) must have reasoning_text content or summary_text "
                       "parts.", param=f"input[{index}]")
    text = "\n\n".join(str(p.get("text", "")) for p in parts if p.get("text"))
    if text:
        messages.append({"role": "assistant", "content": "", "reasoning_content": text})


def _add_message(messages: list[dict[str, Any]], item: dict[str, Any], index: int) -> None:
    """A message item; an assistant's joins the turn a reasoning item opened."""
    role = item.get("role")
    if role not in MESSAGE_ROLES:
        raise ApiError(400, f"input[{index}].role must be one of {', '.join(MESSAGE_ROLES)}.", param=f"input[{index}].role")
    content = _text(item.get("content"), index)
    if role == "assistant" and _opened_turn(messages):
        messages[-1]["content"] = content
    else:
        messages.append({"role": "system" if role == "developer" else role, "content": content})


def _opened_turn(messages: list[dict[str, Any]]) -> bool:
    """Whether the last message is an assistant turn a reasoning item opened, with nothing in it yet."""
    last = messages[-1] if messages else {}
    return last.get("role") == "assistant" and not last.get("content") and not last.get("tool_calls")


def _text(content: object, index: int) -> str | list[dict[str, Any]]:
    """A string, or text parts (input_text / output_text) joined; with `input_image` parts, text and image parts."""
    if isinstance(content, list) and any(is_image_part(p) for p in content):
        return with_image_parts(content, f"input[{index}].content", TEXT_PARTS)
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") in TEXT_PARTS for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise ApiError(400, f"input[{index}].content must be text (a string or input_text parts).", param=f"input[{index}].content")


def _add_call(messages: list[dict[str, Any]], item: dict[str, Any], index: int) -> None:
    try:
        call = history_call(item.get("call_id"), item.get("name"), item.get("arguments"))
    except ValueError as e:
        raise ApiError(400, f"input[{index}] (a function_call) {e}.", param=f"input[{index}]") from e
    _join_call(messages, call)


def _join_call(messages: list[dict[str, Any]], call: dict[str, Any]) -> None:
    """A call item joins the assistant turn before it (calls of one turn are consecutive items)."""
    if messages and messages[-1]["role"] == "assistant":
        messages[-1].setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})


def _usage(reply: Reply) -> dict[str, Any]:
    s = reply.finished.stats
    return {"input_tokens": s.prompt_tokens, "input_tokens_details": {"cached_tokens": s.cached_prompt_tokens},
            "output_tokens": s.generated_tokens, "output_tokens_details": {"reasoning_tokens": s.thinking.tokens},
            "total_tokens": s.prompt_tokens + s.generated_tokens}


class Render(CommentsSuffice):
    """A Responses response, whole or as the Responses stream of events (one id for all of them)."""

    def __init__(self, request: ApiRequest) -> None:
        self.request = request
        self.id = "resp_" + uuid.uuid4().hex[:24]
        self.created = int(time.time())
        self._sequence = 0
        self._items: list[dict[str, Any]] = []  # output items so far (the open one last while its text streams)
        self._open: dict[str, Any] | None = None  # the reasoning or message item whose text streams

    def _response(self, status: str, output: list[dict[str, Any]], reply: Reply | None = None) -> dict[str, Any]:
        body = {"id": self.id, "object": "response", "created_at": self.created, "status": status, "error": None,
                "incomplete_details": None, "model": self.request.model, "output": output,
                "previous_response_id": None, "text": {"format": {"type": "text"}}, "truncation": "disabled",
                "metadata": {}, "usage": None, **self.request.echo}
        if reply is not None:
            cut = reply.finished.finish_reason in ("length", "context")
            body.update(status="incomplete" if cut else "completed", usage=_usage(reply),
                        incomplete_details={"reason": "max_output_tokens"} if cut else None,
                        speculation=speculation(reply.finished, self.request.params.drafter))
        return body

    def _remember(self, reply: Reply) -> None:
        """Keep the conversation this response ends, for a later request's previous_response_id."""
        if not self.request.echo["store"] or not isinstance(self.request.prompt, list):
            return
        prompt = self.request.prompt[1:] if self.request.echo["instructions"] else self.request.prompt
        answer: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.reasoning:
            answer["reasoning_content"] = reply.reasoning
        if reply.calls:
            answer["tool_calls"] = [history_call(c.id, c.name, c.arguments) for c in reply.calls]
        RECENT.remember(self.id, [*prompt, answer])

    def whole(self, reply: Reply) -> dict[str, Any]:
        self._remember(reply)
        reasoning = [_text_item("reasoning", reply.reasoning)] if reply.reasoning else []
        message = [_text_item("message", reply.text)] if reply.text or not reply.calls else []
        return self._response("completed", reasoning + message + [call_item(c, self.request.tooling) for c in reply.calls], reply)

    def _event(self, kind: str, **fields: Any) -> bytes:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return f"event: {kind}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()

    def opening(self, prompt_tokens: int, cached: int) -> list[bytes]:
        started = self._response("in_progress", [])
        return [self._event("response.created", response=started), self._event("response.in_progress", response=started)]

    def piece(self, piece: AnswerPiece) -> list[bytes]:
        if isinstance(piece, ReasoningPiece):
            return self._text("reasoning", piece.text)
        if isinstance(piece, TextPiece):
            return self._text("message", piece.text) if piece.text else []
        frames = self._close_open()
        item, index = call_item(piece, self.request.tooling), len(self._items)
        self._items.append(item)
        field, kind = ("input", "custom_tool_call_input") if item["type"] == "custom_tool_call" else ("arguments", "function_call_arguments")
        return frames + [
            self._event("response.output_item.added", output_index=index, item={**item, field: "", "status": "in_progress"}),
            self._event(f"response.{kind}.delta", item_id=item["id"], output_index=index, delta=item[field]),
            self._event(f"response.{kind}.done", item_id=item["id"], output_index=index, name=piece.name,
                        **{field: item[field]}),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _text(self, kind: str, text: str) -> list[bytes]:
        """A delta of the `kind` item's text (reasoning or message), opening that item unless it is the open one."""
        frames = []
        if self._open is None or self._open["type"] != kind:
            frames = self._close_open()
            self._open = _text_item(kind, "")
            self._items.append(self._open)
            empty = {**self._open, "status": "in_progress", "content": []}
            frames += [self._event("response.output_item.added", output_index=len(self._items) - 1, item=empty),
                       self._event("response.content_part.added", content_index=0, part=_part(kind, ""), **self._where())]
        self._open["content"][0]["text"] += text
        return frames + [self._event(f"response.{PART_TYPES[kind]}.delta", content_index=0, delta=text, **self._where())]

    def _where(self) -> dict[str, Any]:
        return {"item_id": self._open["id"], "output_index": self._items.index(self._open)}  # type: ignore[index, arg-type]  # only while an item is open

    def _close_open(self) -> list[bytes]:
        if self._open is None:
            return []
        item, where = self._open, self._where()
        self._open = None
        part = item["content"][0]
        return [self._event(f"response.{part['type']}.done", content_index=0, text=part["text"], **where),
                self._event("response.content_part.done", content_index=0, part=part, **where),
                self._event("response.output_item.done", output_index=where["output_index"], item=item)]

    def closing(self, reply: Reply) -> list[bytes]:
        self._remember(reply)
        frames = self._close_open()
        done = self._response("completed", self._items, reply)
        return frames + [self._event(f"response.{done['status']}", response=done)]

    def failure(self, error: ApiError) -> list[bytes]:
        return [self._event("error", code=error.code, message=error.message, param=error.param)]


PART_TYPES = {"message": "output_text", "reasoning": "reasoning_text"}


def _part(kind: str, text: str) -> dict[str, Any]:
    """A text item's content part: the answer's output_text, or the reasoning's reasoning_text."""
    part = {"type": PART_TYPES[kind], "text": text}
    return {**part, "annotations": []} if kind == "message" else part


def _text_item(kind: str, text: str) -> dict[str, Any]:
    """A message item, or a reasoning item (its text as content; no summary is written)."""
    if kind == "reasoning":
        return {"type": "reasoning", "id": "rs_" + uuid.uuid4().hex[:24], "status": "completed", "summary": [],
                "content": [_part(kind, text)]}
    return {"type": "message", "id": "msg_" + uuid.uuid4().hex[:24], "status": "completed", "role": "assistant",
            "content": [_part(kind, text)]}
