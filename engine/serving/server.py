"""`specchat-cli serve` and the app's "Local server": OpenAI-, Anthropic- and Responses-compatible endpoints
over one model pair.

Starlette routes on uvicorn. Each API is a `Dialect`, a translation at the edge: a request is parsed
(`openai_api`, `anthropic_api`, `responses_api`) into the same job, admitted into one bounded queue
(`Admission`: full means 503 with Retry-After), and handed as a `GenerationJob` to the runner that owns the
pair on its MLX thread; the runner's events (with the output already split into reasoning, text and tool calls, see
`tool_calls`) come back to the event loop through an asyncio queue and render in the API's shape. A client
that goes away cancels its job, which the engine sees between rounds. A stream never stays silent longer than
`keepalive_s`: its head goes out once the job starts or that long into its wait in the queue, and SSE comments
fill any longer wait (a queue, a long prefill), since agents drop a silent connection. Every failure is answered in the API's
error shape, and a request's exception never leaves its handler.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import SpecChatError
from ..events import GenerationResult, PrefillEvent
from ..params import GenerationParams
from . import anthropic_api, responses_api
from .generation_queue import Admission, CancelledBeforeStart, GenerationJob, JobRunner, NoModelLoaded, Notice, PromptCount, QueueFull
from .keepalive import KEEPALIVE, KEEPALIVE_S, PENDING, PROGRESS_EVENT_S, prefill_comment, waited
from .openai_api import ApiError, ApiRequest, ResponseShape, engine_error, parse_body
from .pieces import AnswerPiece, ReasoningPiece, TextPiece, ToolCall
from .reasoning_api import parse_openai
from .request_log import RequestRecord
from .tool_calls import Reply, ToolCallMissing

RETRY_AFTER_S = 2
PIECES = (ReasoningPiece, TextPiece, ToolCall)
Defaults = GenerationParams | Callable[[], GenerationParams]
DISCONNECT_POLL_S = 0.1


class ServerState:
    """What the routes share: the runner, the defaults, the key, the queue bound, the log and the open jobs."""

    def __init__(self, runner: JobRunner, defaults: Defaults, api_key: str | None, max_waiting: int,
                 log: Callable[[RequestRecord], None] | None, keepalive_s: float = KEEPALIVE_S,
                 progress_s: float = PROGRESS_EVENT_S) -> None:
        self.runner, self._defaults, self.api_key, self.keepalive_s, self.progress_s = runner, defaults, api_key, keepalive_s, progress_s
        self.admission = Admission(max_waiting)
        self.log = log or (lambda record: None)
        self.served = 0
        self.refused = 0
        self.open_jobs: dict[int, GenerationJob] = {}  # by id(): a job is a dataclass, equal to its twin, unhashable
        self.stopping = False

    def stop_jobs(self) -> None:
        """The server is stopping: every open request's generation is cancelled, so that each ends within a round and
        its response closes as its API closes one (the shutdown cancelled their tasks and cut the streams short)."""
        self.stopping = True
        for job in list(self.open_jobs.values()):
            job.cancel()

    @property
    def defaults(self) -> GenerationParams:
        """The settings a request starts from (the app's: whatever its settings say at the time)."""
        return self._defaults() if callable(self._defaults) else self._defaults


class Render(Protocol):
    """One response in an API's shape: whole, or as its stream of server-sent events."""

    def whole(self, reply: Reply) -> dict[str, Any]: ...

    def opening(self, prompt_tokens: int, cached: int) -> list[bytes]: ...  # cached: what the prompt cache held

    def progress(self) -> list[bytes]: ...  # an event that changes nothing in the answer, for watchdogs (keepalive.py)

    def piece(self, piece: AnswerPiece) -> list[bytes]: ...

    def closing(self, reply: Reply) -> list[bytes]: ...

    def failure(self, error: ApiError) -> list[bytes]: ...


@dataclass(frozen=True)
class Dialect:
    """One API at the edge: how its requests parse into a job and how the job's answer renders back."""

    parse: Callable[[dict[str, Any], list[str], GenerationParams], ApiRequest]
    render: Callable[[ApiRequest], Render]
    error_body: Callable[[ApiError], dict[str, Any]]


OPENAI_CHAT = Dialect(lambda body, models, defaults: parse_openai(body, "chat", models, defaults), ResponseShape, ApiError.body)
OPENAI_COMPLETIONS = Dialect(lambda body, models, defaults: parse_openai(body, "completions", models, defaults),
                             ResponseShape, ApiError.body)
ANTHROPIC = Dialect(anthropic_api.parse_request, anthropic_api.Render, anthropic_api.error_body)
RESPONSES = Dialect(responses_api.parse_request, responses_api.Render, ApiError.body)
ROUTES = {"/v1/chat/completions": OPENAI_CHAT, "/v1/completions": OPENAI_COMPLETIONS, "/v1/messages": ANTHROPIC,
          "/v1/responses": RESPONSES}


def create_app(runner: JobRunner, defaults: Defaults | None = None, *, api_key: str | None = None,
               max_waiting: int = 8, log: Callable[[RequestRecord], None] | None = None,
               keepalive_s: float = KEEPALIVE_S, progress_s: float = PROGRESS_EVENT_S) -> Starlette:
    """The ASGI app serving `runner`'s pair (`keepalive_s`: the longest silence on a stream; `progress_s`: the longest
    a begun stream goes without an event, `keepalive.py`)."""
    state = ServerState(runner, defaults or GenerationParams(), api_key, max_waiting, log, keepalive_s, progress_s)

    def generation(dialect: Dialect) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            return await _generate(state, request, dialect)
        return endpoint

    async def models(request: Request) -> Response:
        _check_key(state, request)
        created = int(time.time())
        data = [{"id": m, "object": "model", "created": created, "owned_by": "specchat"} for m in state.runner.model_ids()]
        return JSONResponse({"object": "list", "data": data})

    async def health(request: Request) -> Response:
        a = state.admission
        return JSONResponse({"status": "ok", "models": state.runner.model_ids(), "busy": a.held > 0,
                             "waiting": max(a.held - 1, 0), "served": state.served, "refused": state.refused})

    async def count_tokens(request: Request) -> Response:
        return await _count_tokens(state, request)

    routes = [Route(path, generation(dialect), methods=["POST"]) for path, dialect in ROUTES.items()]
    routes.append(Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]))
    routes += [Route("/v1/models", models, methods=["GET"]), Route("/health", health, methods=["GET"])]
    handlers = {ApiError: _api_error, HTTPException: _http_error, Exception: _internal_error}
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.state.server = state
    return app


def _check_key(state: ServerState, request: Request) -> None:
    """The server's key, as OpenAI's clients send it (a Bearer token) or Anthropic's (x-api-key)."""
    if state.api_key is None:
        return
    given = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if not secrets.compare_digest(given.encode(), state.api_key.encode()):
        raise ApiError(401, "Incorrect API key: send the server's key as 'Authorization: Bearer KEY' (or 'x-api-key: KEY').",
                       param=None, code="invalid_api_key")


async def _generate(state: ServerState, request: Request, dialect: Dialect) -> Response:
    _check_key(state, request)
    api = dialect.parse(parse_body(await request.body()), state.runner.model_ids(), state.defaults)
    _admit(state)
    job, events = _submit(state, api)
    if api.tooling and api.tooling.left_out:
        api.notes.append("tools left out: " + "; ".join(api.tooling.left_out))
    try:
        first = await _first_event(events, request, job, api.notes, state.keepalive_s if api.stream else None)
    except BaseException:
        job.cancel()
        raise
    if first is None:  # the client went away while waiting
        return _cancelled(state, request.url.path)
    _raise_failure(first)
    render = dialect.render(api)
    if api.stream:
        return StreamingResponse(_stream(state, api, render, job, events, first, request.url.path),
                                 media_type="text/event-stream", headers={"Cache-Control": "no-cache", **_notes(api)})
    return await _whole(state, api, render, job, events, first, request)


def _notes(api: ApiRequest) -> dict[str, str]:
    """The `X-SpecChat-Warning` header naming what the request asked for that the server left out (built-in tools
    it cannot run, tools the model's template has no place for), so a client's log can say why; nothing when all
    was honoured."""
    if not api.notes:
        return {}
    return {"X-SpecChat-Warning": "; ".join(api.notes).encode("latin-1", "replace").decode("latin-1")}


def _cancelled(state: ServerState, path: str) -> Response:
    """The log line of a request whose client went away, and the status (nginx's 499) nobody reads."""
    state.log(RequestRecord(path, 499, note="cancelled: the client went away"))
    return Response(status_code=499)


def _admit(state: ServerState) -> None:
    """A place in the queue, or the 503 (with Retry-After) that says to come back."""
    try:
        state.admission.enter()
    except QueueFull:
        state.refused += 1
        raise ApiError(503, "The server is busy: every place in its queue is taken. Retry after a moment.",
                       kind="server_error", code="queue_full") from None


async def _count_tokens(state: ServerState, request: Request) -> Response:
    """Anthropic's `/v1/messages/count_tokens`: the prompt's tokens (system, messages and tools, as the template
    renders them), counted on the runner's thread, which holds the tokenizer. Its body has no max_tokens."""
    _check_key(state, request)
    body = {**parse_body(await request.body()), "max_tokens": 1, "stream": False}
    api = ANTHROPIC.parse(body, state.runner.model_ids(), state.defaults)
    _admit(state)
    job, events = _submit(state, api, count_only=True)
    event = await _first_event(events, request, job, [])
    if event is None:
        return _cancelled(state, request.url.path)
    _raise_failure(event)
    assert isinstance(event, PromptCount)  # a count_only job delivers one
    return JSONResponse({"input_tokens": event.tokens})


def _submit(state: ServerState, api: ApiRequest, count_only: bool = False) -> tuple[GenerationJob, asyncio.Queue]:
    """Hand the request to the runner; its events arrive in the returned queue on this loop."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue = asyncio.Queue()

    def deliver(event: object) -> None:  # on the runner's thread
        if isinstance(event, (GenerationResult, PromptCount, BaseException)):
            state.admission.leave()
            state.open_jobs.pop(id(job), None)
        with suppress(RuntimeError):  # the loop closed: the server is shutting down
            loop.call_soon_threadsafe(events.put_nowait, event)

    job = GenerationJob(api.prompt, api.chat, api.params, deliver, tooling=api.tooling, count_only=count_only,
                        echo_prompt=api.echo_prompt, suffix=api.suffix)
    state.open_jobs[id(job)] = job
    state.runner.submit(job)
    return job, events


async def _next_event(events: asyncio.Queue, request: Request, job: GenerationJob,
                      patience: float | None = None) -> object | None:
    """The job's next event, None (with the job cancelled) if the client disconnects first, or PENDING once
    `patience` seconds (if given) passed without one."""
    getter = asyncio.ensure_future(events.get())
    give_up = None if patience is None else time.monotonic() + patience
    try:
        while True:
            done, _ = await asyncio.wait({getter}, timeout=DISCONNECT_POLL_S)
            if done:
                return getter.result()
            if give_up is not None and time.monotonic() >= give_up:
                return PENDING
            if await request.is_disconnected():
                job.cancel()
                return None
    finally:
        getter.cancel()


async def _first_event(events: asyncio.Queue, request: Request, job: GenerationJob, notes: list[str],
                       patience: float | None = None) -> object | None:
    """The job's first event after its notices (added to `notes`), None if the client disconnects first, or
    PENDING once `patience` seconds passed without one (a stream then starts, with keep-alives while it waits)."""
    event = await _next_event(events, request, job, patience)
    while isinstance(event, Notice):
        notes.append(event.text)
        event = await _next_event(events, request, job, patience)
    return event


def _raise_failure(event: object) -> None:
    """An exception delivered instead of events, as the client's error."""
    if not isinstance(event, BaseException):
        return
    if isinstance(event, SpecChatError):
        raise engine_error(event)
    if isinstance(event, NoModelLoaded):
        raise ApiError(503, "No model pair is loaded: load one in SpecChat first.", kind="server_error", code="no_model")
    if isinstance(event, CancelledBeforeStart):
        raise ApiError(499, "The request was cancelled.")
    if isinstance(event, ToolCallMissing):
        raise ApiError(500, str(event), kind="model_error", code="tool_call_missing")
    raise event


async def _whole(state: ServerState, api: ApiRequest, render: Render, job: GenerationJob, events: asyncio.Queue,
                 first: object, request: Request) -> Response:
    reply = Reply()
    event: object | None = first
    while not isinstance(event, GenerationResult):
        _raise_failure(event)
        if isinstance(event, PIECES):
            reply.add(event)
        event = await _next_event(events, request, job)
        if event is None:
            return _cancelled(state, request.url.path)
    reply.result = event
    _record(state, api, request.url.path, event)
    return JSONResponse(render.whole(reply), headers=_notes(api))


async def _stream(state: ServerState, api: ApiRequest, render: Render, job: GenerationJob, events: asyncio.Queue,
                  first: object, path: str) -> AsyncIterator[bytes]:
    """The SSE body in the API's shape: its opening events, an event or two per piece of the answer, its closing.

    Starlette cancels this generator when the client disconnects; `finally` then cancels the job."""
    reply = Reply()
    finished = opened = False
    spoke = time.monotonic()  # when the client last got an event (comments do not count for Claude Code)
    try:
        event = first
        while True:
            if isinstance(event, Notice):
                api.notes.append(event.text)
            elif not opened and (event is not PENDING or time.monotonic() - spoke >= state.progress_s):
                # begun once the job starts, or once it waited in the queue so long that a watchdog needs an event
                for frame in render.opening(*((event.total, event.processed) if isinstance(event, PrefillEvent) else (0, 0))):
                    yield frame
                opened, spoke = True, time.monotonic()
            if isinstance(event, GenerationResult):
                break
            if event is PENDING:  # queued, a long prefill, or a slow round
                yield KEEPALIVE
            if isinstance(event, PrefillEvent):
                yield prefill_comment(event)
            if opened and time.monotonic() - spoke >= state.progress_s:
                for frame in render.progress():
                    yield frame
                spoke = time.monotonic()
            if isinstance(event, BaseException):
                finished = True
                for frame in render.failure(_failure_error(event)):
                    yield frame
                return
            if isinstance(event, PIECES):
                reply.add(event)
                for frame in render.piece(event):
                    yield frame
                spoke = time.monotonic()
            event = await waited(events, state.keepalive_s)
        finished = True
        reply.result = event
        for frame in render.closing(reply):
            yield frame
        _record(state, api, path, event)
    finally:
        if not finished:
            job.cancel()
            _cancelled(state, path)


def _failure_error(error: BaseException) -> ApiError:
    """An error that ended a stream after it began, for an error event (the status line was sent already)."""
    try:
        _raise_failure(error)
    except ApiError as e:
        return e
    except BaseException:  # noqa: BLE001 - any other failure is logged and answered as a 500
        _print_traceback(error)
    return ApiError(500, "The server failed while generating; its log has the details.", kind="server_error")


def _record(state: ServerState, api: ApiRequest, path: str, result: GenerationResult) -> None:
    state.served += 1
    s = result.stats
    how = f"speculative ({api.params.drafter})" if api.params.mode == "speculative" else "standard"
    ended = ["stopped with the server"] if state.stopping and result.finish_reason == "cancelled" else []
    state.log(RequestRecord(path, 200, s.generated_tokens, s.tokens_per_pass, s.generation_tps, "; ".join([how, *api.notes, *ended])))


def _error_response(request: Request, error: ApiError, headers: dict[str, str] | None = None) -> Response:
    """The error in the shape of the API the request spoke (Anthropic's under /v1/messages, else OpenAI's)."""
    dialect = ANTHROPIC if request.url.path.startswith("/v1/messages") else OPENAI_CHAT
    return JSONResponse(dialect.error_body(error), status_code=error.status, headers=headers)


async def _api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    request.app.state.server.log(RequestRecord(request.url.path, error.status, note=error.message))
    return _error_response(request, error, {"Retry-After": str(RETRY_AFTER_S)} if error.status == 503 else None)


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    message = {404: f"No route {request.url.path}: the API is under /v1 (chat/completions, completions, messages, "
                    "responses, models).",
               405: f"{request.method} is not allowed on {request.url.path}."}.get(error.status_code, str(error.detail))
    return _error_response(request, ApiError(error.status_code, message))


async def _internal_error(request: Request, error: Exception) -> Response:
    return _error_response(request, ApiError(500, "The server failed on this request; its log has the details.",
                                             kind="server_error"))


def _print_traceback(error: BaseException) -> None:
    print("".join(traceback.format_exception(error)), file=sys.stderr)
