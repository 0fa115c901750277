"""Anthropic's Messages API (`POST /v1/messages`, what Claude Code speaks) as a translation at the edge.

A request's `system` (a string or text blocks), its messages' content blocks (text, `tool_use`, `tool_result`,
`thinking`) and its tools (`input_schema`) become the chat messages and OpenAI-shaped tools our chat templates
read; the answer comes back as content blocks (`thinking` when the model reasoned, text, `tool_use`) with a
`stop_reason` (end_turn, max_tokens, stop_sequence, tool_use) and `usage`, or streamed as Anthropic streams it:
message_start, per block content_block_start / content_block_delta (thinking_delta, text_delta or
input_json_delta; a thinking block's signature_delta last) / content_block_stop, then message_delta and
message_stop; while a long prompt is read, a message_delta without a stop reason now and then (`progress`). The
`speculation` object rides along on the message and the message_delta.

A thinking block's signature is opaque to clients, who send it back unchanged; ours is a digest of the thinking
and nothing checks it (there is no hidden reasoning to protect). `thinking: {"type": "disabled"}` switches a
thinking model's thinking off (`reasoning_api`); thinking blocks in earlier turns are kept as the answer's
reasoning, which the chat layer renders as the model's template does (`redacted_thinking` has no text to keep).

Claude Code's requests are taken as sent, with one turn moved: Claude Code sends the list of its agents and
skills as a `system` turn right after the user's first question, and a small model that reads those ~1,400 tokens
last loses the question (Qwen2.5-Coder-1.5B, asked for a value in a file, read the file twice and never answered;
with the question last it answered from the first read). A system turn that follows the user's text therefore goes
before it (the chat layer merges it into the system prompt for a template that allows one only first). The prompt
before the question is then the same in every session of the project, so the prompt cache reuses it. Server tools
(web_search_20250305 and the like, run by Anthropic) are left out with a note; `output_config.format` is the
answer's JSON schema, and the rest of what we cannot act on (`context_management`, `metadata`, `output_config.effort`,
`cache_control`) is ignored. `/v1/messages/count_tokens` counts the same prompt (server.py).

One thing Claude Code sends is not given to the model: its system prompt opens with a block of billing metadata,
`x-anthropic-billing-header: cc_version=2.1.197.c0a; cc_entrypoint=cli; cch=36ee5;`, whose values follow the
request's content (the version's suffix the first user message, `cch` the whole body in the interactive CLI).
Read as text it would put a new token near the prompt's start of every session, or of every request, so that the
prompt cache could never reuse the ~20k tokens of system prompt and tools behind it. It tells the model nothing.

Errors are Anthropic's shape, `{"type": "error", "error": {"type", "message"}}`, with the status Anthropic
uses.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from ..events import GenerationResult
from ..params import GenerationParams
from .api_error import ContextLengthExceeded
from .image_parts import image_part
from .openai_api import ApiError, ApiRequest, read_tools, request_params, served_model, typed
from .pieces import AnswerPiece, ReasoningPiece, TextPiece, ToolCall
from .reasoning_api import anthropic_thinks, with_thinking
from .response_format import anthropic_schema
from .speculation_report import speculation
from .tool_calls import LeftOut, Reply, Tool, ToolChoice, Tooling, function_tool, history_call

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
               413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error", 529: "overloaded_error"}
ROLES = ("user", "assistant", "system")
BILLING_HEADER = "x-anthropic-billing-header:"  # Claude Code's per-request metadata atop its system prompt
STOP_REASONS = {"length": "max_tokens", "context": "max_tokens"}
IGNORED_BLOCKS = ("thinking", "redacted_thinking")  # in a user turn; an assistant turn keeps its thinking
EMPTY_BLOCKS = {"text": {"type": "text", "text": ""}, "thinking": {"type": "thinking", "thinking": "", "signature": ""}}
EMPTY_DELTAS = {"text": {"type": "text_delta", "text": ""}, "thinking": {"type": "thinking_delta", "thinking": ""}}


def error_body(error: ApiError) -> dict[str, Any]:
    """An error as Anthropic's clients parse it; a prompt too long for the context in Anthropic's own words, which
    Claude Code reads to compact the conversation and send it again."""
    kind = ERROR_TYPES.get(error.status, "api_error" if error.status >= 500 else "invalid_request_error")
    message = error.message
    if isinstance(error, ContextLengthExceeded):
        message = f"prompt is too long: {error.tokens} tokens > {error.limit} maximum"
    return {"type": "error", "error": {"type": kind, "message": message}}


def parse_request(body: dict[str, Any], models: list[str], defaults: GenerationParams) -> ApiRequest:
    """A Messages body as the job every API makes."""
    model = served_model(body, models)
    if "max_tokens" not in body:
        raise ApiError(400, "max_tokens: Field required (the most tokens to generate, e.g. 1024).", param="max_tokens")
    messages = _system(body.get("system")) + _messages(body.get("messages"))
    translated = {**body, "stop": body.get("stop_sequences")}
    try:
        params = request_params(translated, defaults)
    except ApiError as e:
        raise ApiError(e.status, e.message.replace("'stop'", "'stop_sequences'"), e.kind, e.param, e.code) from None
    params = params.replace(json_schema=anthropic_schema(body))
    return ApiRequest("messages", model, messages, with_thinking(params, anthropic_thinks(body)),
                      typed(body, "stream", bool, False), tooling=_tooling(body))


def _system(system: object) -> list[dict[str, Any]]:
    """The request's system prompt as one system message, without Claude Code's billing block (see above: its
    values change with each request, and the prompt cache could reuse nothing behind them)."""
    if isinstance(system, list):
        system = [b for b in system if not (isinstance(b, dict) and str(b.get("text", "")).startswith(BILLING_HEADER))]
    elif isinstance(system, str) and system.startswith(BILLING_HEADER):
        system = system.partition("\n")[2]
    if system is None or system == "" or system == []:
        return []
    return [{"role": "system", "content": _text(system, "system")}]


def _text(content: object, where: str) -> str:
    """A string, or text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "".join(str(b.get("text", "")) for b in content)
    raise ApiError(400, f"{where}: must be a string or a list of text blocks.", param=where)


def _messages(messages: object) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages: a non-empty list of {role, content} objects is required.", param="messages")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            raise ApiError(400, f"messages.{i}.role: must be 'user', 'assistant' or 'system'.", param=f"messages.{i}.role")
        content = message.get("content")
        if role == "system":  # Claude Code's context for the question it follows: a system turn before that question
            out.insert(_before_the_question(out), {"role": "system", "content": _text(content, f"messages.{i}.content")})
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise ApiError(400, f"messages.{i}.content: must be a string or a list of content blocks.", param=f"messages.{i}.content")
        out += _user_turn(blocks, i) if role == "user" else [_assistant_turn(blocks, i)]
    if not any(m["role"] != "system" for m in out):
        raise ApiError(400, "messages: at least one user message is required.", param="messages")
    return out


def _before_the_question(out: list[dict[str, Any]]) -> int:
    """Where a system turn goes: before the user's text it follows (after any tool results), so that the user's
    words stay the last thing the model reads before it answers, as chat models are trained."""
    at = len(out)
    while at and out[at - 1]["role"] == "user":
        at -= 1
    return at


def _user_turn(blocks: list[Any], index: int) -> list[dict[str, Any]]:
    """A user turn: its tool results as `tool` messages (they answer the previous turn's calls), then its text."""
    results, texts = [], []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "image":
            texts.append(image_part(block, f"messages.{index}.content.{j}"))
        elif kind == "tool_result":
            results.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id", "")),
                            "content": _result_text(block.get("content"), f"messages.{index}.content.{j}.content")})
        elif kind == "text":
            texts.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind not in IGNORED_BLOCKS:
            raise _unsupported_block(kind, index, j)
    if any(part["type"] == "image" for part in texts):
        return results + [{"role": "user", "content": texts}]
    return results + ([{"role": "user", "content": "".join(p["text"] for p in texts)}] if texts or not results else [])


def _result_text(content: object, where: str) -> str:
    """A tool result's text; a block the model cannot read (an image a tool returned) is named in its place."""
    if content is None:
        return ""
    if isinstance(content, list):
        content = [b if isinstance(b, dict) and b.get("type") == "text" else
                   {"type": "text", "text": f"[{b.get('type') if isinstance(b, dict) else 'a'} block left out]"}
                   for b in content]
    return _text(content, where)


def _assistant_turn(blocks: list[Any], index: int) -> dict[str, Any]:
    """An assistant turn: its text, its thinking as its reasoning, and its tool_use blocks as the calls chat
    templates render."""
    texts, thoughts, calls = [], [], []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "thinking":
            thoughts.append(str(block.get("thinking", "")))
        elif kind == "tool_use":
            try:
                calls.append(history_call(block.get("id"), block.get("name"), block.get("input", {})))
            except ValueError as e:
                raise ApiError(400, f"messages.{index}.content.{j}: tool_use {e}.", param=f"messages.{index}.content.{j}") from e
        elif kind not in IGNORED_BLOCKS:
            raise _unsupported_block(kind, index, j)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if any(thoughts):
        message["reasoning_content"] = "\n\n".join(t for t in thoughts if t)
    return {**message, "tool_calls": calls} if calls else message


def _unsupported_block(kind: object, index: int, block: int) -> ApiError:
    return ApiError(400, f"messages.{index}.content.{block}: blocks of type {kind!r} are not supported here (text, image, "
                    "tool_use and tool_result are).", param=f"messages.{index}.content.{block}")


def _tooling(body: dict[str, Any]) -> Tooling | None:
    tools, choice = body.get("tools"), body.get("tool_choice")
    if not tools and choice is None:
        return None
    converted, left_out = read_tools(tools, _tool, lambda i: f"tools.{i}:", "{name, description, input_schema}")
    one_call = isinstance(choice, dict) and choice.get("disable_parallel_tool_use") is True
    return Tooling(converted, _choice(choice, [t["function"]["name"] for t in converted]), left_out, one_call=one_call)


def _tool(tool: object) -> Tool:
    """A client tool; a server tool ({type: 'web_search_20250305', name}, run by Anthropic's servers) is left out."""
    if isinstance(tool, dict) and "input_schema" not in tool and tool.get("type") not in (None, "custom"):
        raise LeftOut(f"{tool.get('name') or tool['type']} (a server tool of type {tool['type']!r}: this server runs none)")
    if not isinstance(tool, dict) or "input_schema" not in tool:
        raise ValueError("needs a name and an input_schema")
    return function_tool(tool.get("name"), tool.get("description"), tool.get("input_schema"))


def _choice(choice: object, names: list[str]) -> ToolChoice:
    """{type: auto | any | none} or {type: tool, name}, as a ToolChoice."""
    kind = choice.get("type") if isinstance(choice, dict) else None
    if choice is None or kind == "auto":
        return ToolChoice("auto")
    if kind in ("any", "none"):
        return ToolChoice("required" if kind == "any" else "none")
    if kind == "tool" and choice.get("name") in names:  # type: ignore[attr-defined]  # a kind: a dict
        return ToolChoice("named", choice["name"])  # type: ignore[index]  # a kind: a dict
    raise ApiError(400, "tool_choice: must be {type: 'auto'}, {type: 'any'}, {type: 'none'} or {type: 'tool', name} "
                   f"naming one of the tools ({', '.join(names)}).", param="tool_choice")


def stop_reason(reply: Reply) -> str:
    """end_turn, max_tokens, stop_sequence or tool_use."""
    result = reply.finished
    if result.finish_reason in STOP_REASONS:
        return STOP_REASONS[result.finish_reason]
    if reply.calls:
        return "tool_use"
    return "stop_sequence" if result.stop_string is not None else "end_turn"


def _usage(prompt_tokens: int, output_tokens: int, cached: int = 0) -> dict[str, int]:
    """Anthropic's usage: `input_tokens` are those read anew, `cache_read_input_tokens` those the prompt cache held
    (their sum is the prompt); nothing is written to a cache on request, so `cache_creation_input_tokens` is 0."""
    return {"input_tokens": prompt_tokens - cached, "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached,
            "output_tokens": output_tokens}


def _result_usage(result: GenerationResult) -> dict[str, int]:
    s = result.stats
    return _usage(s.prompt_tokens, s.generated_tokens, s.cached_prompt_tokens)


def _tool_use(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments_object()}


def _thinking_block(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature(text)}


def signature(thinking: str) -> str:
    """An opaque signature for a thinking block (clients require one and send it back; nothing checks it)."""
    return "specchat-" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()


class Render:
    """A Messages response, whole or as Anthropic's stream of events (one id for all of them)."""

    def __init__(self, request: ApiRequest) -> None:
        self.request = request
        self.id = "msg_" + uuid.uuid4().hex[:24]
        self._blocks = 0
        self._open: tuple[str, int] | None = None  # the streamed block still open: its type and index
        self._thinking = ""
        self._usage_so_far = _usage(0, 0)  # what message_start said, until the closing message_delta

    def _message(self, content: list[dict[str, Any]], usage: dict[str, int]) -> dict[str, Any]:
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.request.model, "content": content,
                "stop_reason": None, "stop_sequence": None, "usage": usage}

    def whole(self, reply: Reply) -> dict[str, Any]:
        result = reply.finished
        thinking = [_thinking_block(reply.reasoning)] if reply.reasoning else []
        text = [{"type": "text", "text": reply.text}] if reply.text or not reply.calls else []
        body = self._message(thinking + text + [_tool_use(c) for c in reply.calls], _result_usage(result))
        body.update(stop_reason=stop_reason(reply), stop_sequence=result.stop_string,
                    speculation=speculation(result, self.request.params.drafter))
        return body

    def opening(self, prompt_tokens: int, cached: int) -> list[bytes]:
        self._usage_so_far = _usage(prompt_tokens, 0, cached)
        return [_sse({"type": "message_start", "message": self._message([], self._usage_so_far)})]

    def progress(self) -> list[bytes]:
        """An event that adds nothing to the message, which Claude Code's watchdog counts (it counts neither `ping`
        nor comments). Inside a text or thinking block (the output splitter may hold back a long stretch that could
        be a call), an empty delta of that block. Outside one (the prompt is being read), a `message_delta` with no
        stop reason yet and the usage so far (a delta's counts are cumulative; the SDKs overwrite theirs with them):
        besides `ping`, the one event Anthropic's stream allows there. Claude Code adds each message_delta's usage to
        its session's tally, so every one sent counts the prompt again there (`PROGRESS_EVENT_S` apart, a handful
        while a long prompt is read); the message is unchanged."""
        if self._open is not None:
            kind, index = self._open
            return [_sse({"type": "content_block_delta", "index": index, "delta": EMPTY_DELTAS[kind]})]
        return [_sse({"type": "message_delta", "delta": {"stop_reason": None, "stop_sequence": None},
                      "usage": self._usage_so_far})]

    def piece(self, piece: AnswerPiece) -> list[bytes]:
        if isinstance(piece, ReasoningPiece):
            self._thinking += piece.text
            return self._delta("thinking", {"type": "thinking_delta", "thinking": piece.text})
        if isinstance(piece, TextPiece):
            return self._delta("text", {"type": "text_delta", "text": piece.text}) if piece.text else []
        frames = self._close_block()
        index = self._next_block()
        start = {"type": "tool_use", "id": piece.id, "name": piece.name, "input": {}}
        return frames + [
            _sse({"type": "content_block_start", "index": index, "content_block": start}),
            _sse({"type": "content_block_delta", "index": index,
                  "delta": {"type": "input_json_delta", "partial_json": piece.arguments}}),
            _sse({"type": "content_block_stop", "index": index}),
        ]

    def _delta(self, kind: str, delta: dict[str, Any]) -> list[bytes]:
        """A delta of a `kind` block (text or thinking), opening the block first unless it is the open one."""
        frames = []
        if self._open is None or self._open[0] != kind:
            frames += self._close_block()
            self._open = (kind, self._next_block())
            frames.append(_sse({"type": "content_block_start", "index": self._open[1], "content_block": EMPTY_BLOCKS[kind]}))
        return frames + [_sse({"type": "content_block_delta", "index": self._open[1], "delta": delta})]

    def _close_block(self) -> list[bytes]:
        """Close the open block; a thinking block gets its signature first, as Anthropic sends it."""
        if self._open is None:
            return []
        (kind, index), self._open = self._open, None
        frames = []
        if kind == "thinking":
            delta = {"type": "signature_delta", "signature": signature(self._thinking)}
            frames.append(_sse({"type": "content_block_delta", "index": index, "delta": delta}))
        return frames + [_sse({"type": "content_block_stop", "index": index})]

    def _next_block(self) -> int:
        self._blocks += 1
        return self._blocks - 1

    def closing(self, reply: Reply) -> list[bytes]:
        result = reply.finished
        delta = {"type": "message_delta", "delta": {"stop_reason": stop_reason(reply), "stop_sequence": result.stop_string},
                 "usage": _result_usage(result),
                 "speculation": speculation(result, self.request.params.drafter)}
        return self._close_block() + [_sse(delta), _sse({"type": "message_stop"})]

    def failure(self, error: ApiError) -> list[bytes]:
        return [_sse(error_body(error))]
