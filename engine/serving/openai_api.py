"""The OpenAI wire format: request bodies into our settings, results into OpenAI's response and chunk shapes.

Pure data, no HTTP and no MLX, so each rule is testable on its own. Every request problem is an `ApiError`
carrying the status and the error body OpenAI's clients parse (`{"error": {"message", "type", "param",
"code"}}`). Besides OpenAI's fields we take our own as extra body fields (`num_draft`, `drafter`, `mode`,
`top_k`, `min_p`, `adaptive`, `repetition_penalty`, `lenience`, `ssd`, `fanout`, `history`) and answer with a `speculation` object next to `usage`.

Chat requests may offer `tools` with a `tool_choice`; the history may hold assistant turns with `tool_calls`
and `tool` turns with their results. Calls come back as `tool_calls` (finish_reason "tool_calls"), streamed as
OpenAI streams them: per call one delta with its index, id and name, then one with its arguments. Custom
(freeform) tools are offered and held to their grammars as Responses' are (`custom_tools`), and their calls come
back in the custom shape, `{type: "custom", custom: {name, input}}`; earlier messages are read by `chat_messages`. `logprobs` /
`top_logprobs` and `response_format` are read (and logprobs shaped) by `token_logprobs.py` and
`response_format.py`. The request parsing here (settings, model, errors) is shared by the Anthropic and Responses
translations.

A thinking model's reasoning comes back as `reasoning_content`, in the message and in streamed deltas; the request
side of reasoning (the thinking switch, earlier answers' reasoning) is layered on in `reasoning_api`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..drafter_kinds import names as drafter_names
from ..errors import InvalidParameterError, PromptTooLongError, SpecChatError
from ..events import GenerationResult
from ..params import MODES, GenerationParams
from . import token_logprobs
from .api_error import ApiError, ContextLengthExceeded, typed
from .chat_messages import chat_messages
from .completion_suffix import suffix_requested
from .custom_tools import call_input, custom_tool, grammars
from .keepalive import CommentsSuffice
from .pieces import AnswerPiece, ReasoningPiece, ToolCall
from .prompt_echo import echo_requested
from .response_format import chat_schema
from .speculation_report import speculation
from .tool_calls import LeftOut, Reply, Tool, ToolChoice, Tooling, function_name, function_tool
from .unhonoured_fields import unhonoured_notes

# Body field -> GenerationParams field, with the type a JSON value must have.
NUMBER_FIELDS = {"temperature": "temperature", "top_p": "top_p", "min_p": "min_p", "repetition_penalty": "repetition_penalty",
                 "lenience": "lenience", "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty"}
WHOLE_FIELDS = {"top_k": "top_k", "num_draft": "num_draft", "max_draft": "max_draft", "seed": "seed", "fanout": "fanout"}
# Body field -> its choices, read when a request comes (a drafter kind registered since is among them).
CHOICE_FIELDS: dict[str, Callable[[], tuple[str, ...]]] = {"mode": lambda: MODES, "drafter": drafter_names}
MAX_STOP_STRINGS = 4


def engine_error(error: SpecChatError) -> ApiError:
    """An engine error (raised while generating) as the client's error: all of them are about the request."""
    if isinstance(error, PromptTooLongError):
        return ContextLengthExceeded(str(error), error.tokens, error.limit)
    return ApiError(400, str(error), code="invalid_value" if isinstance(error, InvalidParameterError) else None)


@dataclass
class ApiRequest:
    """One request, parsed: what to generate from and how."""

    endpoint: str  # "chat", "completions", "messages" (Anthropic) or "responses"
    model: str
    prompt: str | list[int] | list[dict[str, Any]]  # a completion's text or token ids, or a chat's messages
    params: GenerationParams
    stream: bool = False
    include_usage: bool = False
    tooling: Tooling | None = None
    echo: dict[str, Any] = field(default_factory=dict)  # request fields a response repeats (Responses)
    notes: list[str] = field(default_factory=list)  # what was asked and not honoured (the X-SpecChat-Warning header)
    echo_prompt: bool = False  # completions' echo: the prompt in front of the answer (`prompt_echo.py`)
    suffix: str | None = None  # completions' suffix: the answer is the middle between the prompt and it

    @property
    def chat(self) -> bool:
        return self.endpoint != "completions"


def parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body."""
    try:
        body = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ApiError(400, f"The request body is not valid JSON ({e}). Send a JSON object.") from e
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    try:  # JSON's \ud800 escapes decode to lone surrogates, which no tokenizer reads
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        raise ApiError(400, f"The request body holds a lone UTF-16 surrogate ({e.object[e.start:e.end]!r}), which is not "
                       "text: send each surrogate pair whole, or the character itself.") from None
    return body


def parse_request(body: dict[str, Any], endpoint: str, models: list[str], defaults: GenerationParams) -> ApiRequest:
    """A chat or completions body as an `ApiRequest` against the served `models` (the first is the default)."""
    model = served_model(body, models)
    prompt = chat_messages(body) if endpoint == "chat" else _prompt(body)
    echo_prompt, suffix = echo_requested(body, endpoint), suffix_requested(body, endpoint)
    if body.get("n") not in (None, 1):
        raise ApiError(400, "Only n = 1 is supported: one model pair generates one answer at a time.", param="n")
    stream = typed(body, "stream", bool, False)
    options = typed(body, "stream_options", dict, None) or {}
    tooling = _tooling(body) if endpoint == "chat" else None
    params = request_params(body, defaults).replace(logprobs=token_logprobs.requested(body, endpoint),
                                                    json_schema=chat_schema(body) if endpoint == "chat" else None)
    return ApiRequest(endpoint, model, prompt, params, stream, bool(options.get("include_usage")), tooling,
                      notes=unhonoured_notes(body), echo_prompt=echo_prompt, suffix=suffix)


def served_model(body: dict[str, Any], models: list[str]) -> str:
    """The served model's name for the request's `model` (absent: the first), or a 404 naming what is served."""
    if not models:
        raise ApiError(503, "No model pair is loaded: load one in SpecChat first.", kind="server_error", code="no_model")
    model = body.get("model", models[0])
    if model not in models:
        raise ApiError(404, f"The model {model!r} does not exist here: this server serves {', '.join(models)}.",
                       param="model", code="model_not_found")
    return models[0]


def _tooling(body: dict[str, Any]) -> Tooling | None:
    """The request's tools (functions, and custom tools as `custom_tools` offers them) and tool choice; None when it
    offers none."""
    tools, choice = body.get("tools"), body.get("tool_choice")
    if tools is None and choice in (None, "none", "auto"):
        return None
    converted, _ = read_tools(tools, _tool, lambda i: f"tools[{i}]", "{type: 'function', function: {...}}")
    freeform = grammars(t.get("custom") for t in tools if isinstance(t, dict) and t.get("type") == "custom")  # type: ignore[union-attr]
    return Tooling(converted, _choice(choice, [function_name(t) for t in converted]), freeform=freeform, one_call=one_call(body))


def one_call(body: dict[str, Any]) -> bool:
    """Whether the request allows one tool call at most (`parallel_tool_calls: false`, in chat and in Responses)."""
    return not typed(body, "parallel_tool_calls", bool, True)


def read_tools(tools: object, read: Callable[[Any], Tool], param: Callable[[int], str],
               shape: str) -> tuple[list[Tool], tuple[str, ...]]:
    """Each offered tool in OpenAI's function shape, by `read` (one API's reader, raising ValueError on a bad one),
    and a note for each tool it left out (`LeftOut`: a built-in tool this server cannot run)."""
    if not isinstance(tools, list) or not tools:
        raise ApiError(400, f"'tools' must be a non-empty list of {shape} objects when tool_choice asks for a call.",
                       param="tools")
    converted, left_out = [], []
    for i, tool in enumerate(tools):
        try:
            converted.append(read(tool))
        except LeftOut as e:
            left_out.append(str(e))
        except ValueError as e:
            raise ApiError(400, f"{param(i)} {e}.", param=param(i)) from e
    return converted, tuple(left_out)


def _tool(tool: object) -> Tool:
    kind = tool.get("type") if isinstance(tool, dict) else None
    spec = tool.get(kind) if isinstance(tool, dict) and kind in ("function", "custom") else None
    if not isinstance(spec, dict):
        raise ValueError("must be {type: 'function', function: {name, description, parameters}} or {type: 'custom', "
                         "custom: {name, description, format}}")
    return custom_tool(spec) if kind == "custom" else function_tool(spec.get("name"), spec.get("description"), spec.get("parameters"))


def _choice(choice: object, names: list[str]) -> ToolChoice:
    """'auto' (the default), 'none', 'required' or {type: 'function', function: {name}} ({type: 'custom', custom:
    {name}}) naming an offered tool."""
    if choice is None or choice in ("auto", "none", "required"):
        return ToolChoice(choice or "auto")
    kind = choice.get("type") if isinstance(choice, dict) else None
    named = choice.get(kind) if isinstance(choice, dict) and kind in ("function", "custom") else None
    name = named.get("name") if isinstance(named, dict) else None
    if name not in names:
        raise ApiError(400, "'tool_choice' must be 'auto', 'none', 'required' or {type: 'function', function: {name}} "
                       f"naming one of the tools ({', '.join(names)}).", param="tool_choice")
    return ToolChoice("named", name)


def _prompt(body: dict[str, Any]) -> str | list[int]:
    """A completion's prompt: its text, or its token ids (OpenAI's array of tokens, which evaluation harnesses
    send to score a prompt tokenized their own way); one prompt, alone or as a batch of one."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return prompt
    if not isinstance(prompt, str) or not prompt:
        raise ApiError(400, "'prompt' is required: a non-empty string or array of token ids (one prompt: batches of "
                       "several are not supported).", param="prompt")
    return prompt


def request_params(body: dict[str, Any], defaults: GenerationParams) -> GenerationParams:
    """The server's defaults with the request's settings on top, validated as the engine validates them."""
    changes: dict[str, Any] = {field: typed(body, name, (int, float), None) for name, field in NUMBER_FIELDS.items()}
    changes.update({field: typed(body, name, int, None) for name, field in WHOLE_FIELDS.items()})
    for name, read_choices in CHOICE_FIELDS.items():
        value = typed(body, name, str, None)
        if value is not None and value not in (choices := read_choices()):
            raise ApiError(400, f"'{name}' must be one of {', '.join(choices)}, not {value!r}.", param=name)
        changes[name] = value
    changes["adaptive"] = typed(body, "adaptive", bool, None)
    changes["ssd"] = typed(body, "ssd", bool, None)
    changes["history"] = typed(body, "history", bool, None)
    limit = typed(body, "max_completion_tokens", int, None)
    changes["max_tokens"] = typed(body, "max_tokens", int, limit)
    changes["stop"] = _stop(body)
    changes["logit_bias"] = _logit_bias(body)
    changes = {k: v for k, v in changes.items() if v is not None}
    if changes.get("temperature", 0) > 2:
        raise ApiError(400, f"'temperature' must be between 0 and 2, not {changes['temperature']}.", param="temperature")
    for name, value in changes.items():  # one at a time, so an error names the field it is about
        _replace(defaults, {name: value}, param=_BODY_NAMES.get(name, name))
    return _replace(defaults, changes, param=None)


_BODY_NAMES = {field: name for name, field in {**NUMBER_FIELDS, **WHOLE_FIELDS}.items()}


def _replace(defaults: GenerationParams, changes: dict[str, Any], param: str | None) -> GenerationParams:
    try:
        return defaults.replace(**changes)
    except InvalidParameterError as e:
        raise ApiError(400, str(e), param=param, code="invalid_value") from e


def _logit_bias(body: dict[str, Any]) -> dict[int, Any] | None:
    """OpenAI's logit_bias, an object of token ids (as JSON keys, strings) to biases, with the ids as numbers; the
    engine checks the biases' range, and the ids against the model's vocabulary when it generates."""
    bias = typed(body, "logit_bias", dict, None)
    if bias is None:
        return None
    if not all(isinstance(key, str) and key.isdecimal() for key in bias):
        raise ApiError(400, "'logit_bias' must map token ids (whole numbers from 0, as JSON keys) to biases from -100 "
                       f"to 100, not {bias!r}.", param="logit_bias")
    return {int(key): value for key, value in bias.items()}


def _stop(body: dict[str, Any]) -> tuple[str, ...] | None:
    stop = body.get("stop")
    if stop is None:
        return None
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops) or len(stops) > MAX_STOP_STRINGS:
        raise ApiError(400, f"'stop' must be a non-empty string or a list of up to {MAX_STOP_STRINGS} of them.", param="stop")
    return tuple(stops)


FINISH = {"stop": "stop", "length": "length", "context": "length", "cancelled": "stop"}


def new_id(endpoint: str) -> str:
    return ("chatcmpl-" if endpoint == "chat" else "cmpl-") + uuid.uuid4().hex[:24]


def usage(result: GenerationResult) -> dict[str, Any]:
    """OpenAI's usage, with the prompt tokens the prompt cache already held as `prompt_tokens_details.cached_tokens`."""
    s = result.stats
    return {"prompt_tokens": s.prompt_tokens, "completion_tokens": s.generated_tokens,
            "total_tokens": s.prompt_tokens + s.generated_tokens,
            "prompt_tokens_details": {"cached_tokens": s.cached_prompt_tokens}}


class ResponseShape(CommentsSuffice):
    """The response and chunk bodies of one request (one id and creation time for all its chunks).

    Also the server's renderer for chat completions and completions: `whole`, or `opening`, `piece` per
    piece of the answer, `closing` and, when generation fails mid-stream, `failure`."""

    def __init__(self, request: ApiRequest) -> None:
        self.request = request
        self.id = new_id(request.endpoint)
        self.created = int(time.time())
        self.object = "chat.completion" if request.chat else "text_completion"
        self._calls = 0
        self._offset = 0  # where the next logprobs' text starts (legacy completions' text_offset)

    def _envelope(self, kind: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.request.model, "choices": choices}

    def whole(self, reply: Reply) -> dict[str, Any]:
        """The whole, non-streamed response."""
        result = reply.finished
        finish = finish_reason(reply)
        if self.request.chat:
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            if reply.calls:
                message.update(content=reply.text or None, tool_calls=[_call_body(c, self.request.tooling) for c in reply.calls])
            choice = {"index": 0, "message": _with_reasoning(message, reply.reasoning), "finish_reason": finish,
                      "logprobs": self._logprobs(reply.logprobs)}
        else:
            choice = _with_reasoning({"index": 0, "text": reply.text, "finish_reason": finish,
                                      "logprobs": self._logprobs(reply.logprobs)}, reply.reasoning)
        body = self._envelope(self.object, [choice])
        body.update(usage=usage(result), speculation=speculation(result, self.request.params.drafter))
        return body

    def chunk(self, text: str | None = None, finish: str | None = None, first: bool = False,
              logprobs: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
        """A streamed chunk: the first (the role), a piece of text (with its tokens' logprobs), or the last."""
        figures = self._logprobs(logprobs) if logprobs else None
        if not self.request.chat:
            return self._envelope("text_completion", [{"index": 0, "text": text or "", "finish_reason": finish, "logprobs": figures}])
        delta: dict[str, str] = {"role": "assistant", "content": ""} if first else ({"content": text} if text else {})
        return self._delta(delta, finish, figures)

    def _delta(self, delta: dict[str, Any], finish: str | None = None, logprobs: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._envelope("chat.completion.chunk", [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": logprobs}])

    def _logprobs(self, entries: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> dict[str, Any] | None:
        """A choice's `logprobs` in the endpoint's shape, or None when the request asked for none."""
        if self.request.params.logprobs is None:
            return None
        if self.request.chat:
            return token_logprobs.chat_logprobs(list(entries))
        figures = token_logprobs.completion_logprobs(list(entries), self._offset)
        self._offset += sum(len(token) for token in figures["tokens"])
        return figures

    def call_chunks(self, call: ToolCall) -> list[dict[str, Any]]:
        """A call as OpenAI streams it: its index, id and name (arguments empty), then its arguments (a custom tool's:
        its input)."""
        index, self._calls = self._calls, self._calls + 1
        body = _call_body(call, self.request.tooling)
        kind = body["type"]
        field = "input" if kind == "custom" else "arguments"
        head = {"index": index, **body, kind: {**body[kind], field: ""}}
        rest = {"index": index, kind: {field: body[kind][field]}}
        return [self._delta({"tool_calls": [head]}), self._delta({"tool_calls": [rest]})]

    def last_chunks(self, reply: Reply) -> list[dict[str, Any]]:
        """The chunk with the finish reason, usage and speculation; and OpenAI's usage-only chunk when asked."""
        result = reply.finished
        last = self.chunk(finish=finish_reason(reply))
        last.update(usage=usage(result), speculation=speculation(result, self.request.params.drafter))
        chunks = [last]
        if self.request.include_usage:
            usage_only = self._envelope(last["object"], [])
            usage_only["usage"] = usage(result)
            chunks.append(usage_only)
        return chunks

    def opening(self, prompt_tokens: int, cached: int) -> list[bytes]:
        return [sse(self.chunk(first=True))] if self.request.chat else []

    def piece(self, piece: AnswerPiece) -> list[bytes]:
        if isinstance(piece, ToolCall):
            return [sse(chunk) for chunk in self.call_chunks(piece)]
        if isinstance(piece, ReasoningPiece):
            return [sse(self.reasoning_chunk(piece.text))]
        return [sse(self.chunk(text=piece.text, logprobs=piece.logprobs))] if piece.text else []

    def reasoning_chunk(self, text: str) -> dict[str, Any]:
        """A piece of reasoning as DeepSeek's API, LM Studio and vLLM stream it: `reasoning_content` beside the
        content (mlx-lm's server calls it `reasoning`)."""
        if not self.request.chat:
            return self._envelope("text_completion", [{"index": 0, "text": "", "reasoning_content": text,
                                                       "finish_reason": None, "logprobs": None}])
        return self._delta({"reasoning_content": text})

    def closing(self, reply: Reply) -> list[bytes]:
        return [sse(chunk) for chunk in self.last_chunks(reply)] + [sse("[DONE]")]

    def failure(self, error: ApiError) -> list[bytes]:
        return [sse(error.body())]


def finish_reason(reply: Reply) -> str:
    """OpenAI's finish reason: "tool_calls" when the model called tools and stopped of its own accord."""
    finish = FINISH[reply.finished.finish_reason]
    return "tool_calls" if reply.calls and finish == "stop" else finish


def _with_reasoning(body: dict[str, Any], reasoning: str) -> dict[str, Any]:
    """A message (or a completion's choice) with the model's reasoning as `reasoning_content`, when it reasoned."""
    return {**body, "reasoning_content": reasoning} if reasoning else body


def _call_body(call: ToolCall, tooling: Tooling | None) -> dict[str, Any]:
    """A call as the message's `tool_calls` hold it: a custom tool's with its input text, else a function's."""
    if tooling is not None and call.name in tooling.freeform:
        return {"id": call.id, "type": "custom", "custom": {"name": call.name, "input": call_input(call)}}
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event as OpenAI streams them."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {payload}\n\n".encode()
