"""Generation jobs for the server: one pair generates one answer at a time, on the thread that owns MLX.

The server's request handlers run on an event loop; MLX objects belong to the thread that made them. So a
request becomes a `GenerationJob` handed to a runner that owns the pair: `EngineThread` for `specchat-cli
serve` (it loads the pair itself, then runs jobs in order), or the app's engine worker for its "Local server"
switch. Either runs the job with `run_job`, which streams the engine's events to the job's `deliver`
callback and ends with the result or the error. `cancel` is seen between rounds, so a client that goes away
frees the model within one round; a job cancelled while it waited never starts.

`Admission` bounds how many jobs may wait: the server refuses the rest with 503 instead of queueing
without limit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..events import GenerationResult, RoundEvent, TokenEvent
from ..params import GenerationParams
from .pieces import AnswerPiece, ReasoningPiece, TextPiece
from .prompt_echo import echoed_prompt
from .token_logprobs import TokenNames
from .tool_calls import OutputSplitter, ToolChoice, Tooling, unseen_tools_note
from .tool_grammar import FreeformSplitter, constrained, freeform_input

JOB_GRACE_S = 30.0  # how long stopping waits for a running job (cancelled by the server's shutdown) to end
Deliver = Callable[[object], None]  # an engine event, the GenerationResult, or the exception that ended the job


@dataclass
class GenerationJob:
    """One request's generation.

    Attributes:
        prompt: a completion's text or token ids, or a chat's messages.
        chat: apply the chat template (chat completions).
        params: the request's settings.
        deliver: called on the runner's thread with each engine event, each `ReasoningPiece` / `TextPiece` /
            `ToolCall` the output splits into (after the TokenEvent that completed it), then with the result or an
            exception.
        tooling: the tools offered and the tool choice (None: no tools, the text is never split).
        count_only: count the prompt's tokens (delivered as one `PromptCount`) instead of generating.
        echo_prompt: deliver the prompt first, as the answer's first text (completions' echo, `prompt_echo.py`).
        suffix: the answer is the middle between the prompt and this (completions' suffix, `completion_suffix.py`).
        cancelled: set by the server when the client went away; checked between rounds.
        rounds_after_cancel: rounds the engine still ran after `cancelled` was set (at most one).
    """

    prompt: str | list[int] | list[dict[str, Any]]
    chat: bool
    params: GenerationParams
    deliver: Deliver
    tooling: Tooling | None = None
    count_only: bool = False
    echo_prompt: bool = False
    suffix: str | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    rounds_after_cancel: int = 0

    def cancel(self) -> None:
        self.cancelled.set()


class JobRunner(Protocol):
    """Runs jobs one at a time on the thread that owns the pair."""

    def submit(self, job: GenerationJob) -> None: ...

    def model_ids(self) -> list[str]: ...


def run_job(pair: Any, job: GenerationJob, stream: Callable[..., Iterator[object]] | None = None) -> None:
    """Generate a job's answer with `pair` (a ModelPair, on its thread), delivering every event, then the result.

    `stream` is the engine's `generate_stream` unless a test scripts the generation. Never raises: whatever
    ends the job is delivered to it, so the server answers every request."""
    from ..decoding.fill_in_middle import fim_end_ids, fim_prompt_ids
    from ..decoding.generation import generate_stream
    from ..decoding.prompt_ids import prompt_token_ids

    if job.cancelled.is_set():
        job.deliver(CancelledBeforeStart())
        return
    tooling = job.tooling or Tooling([], ToolChoice("none"))
    try:
        names = TokenNames(pair.tokenizer, pair.vocab_width) if job.params.logprobs is not None else None
        freeform = freeform_input(tooling)
        output = JobOutput(FreeformSplitter(freeform) if freeform else tooling.splitter(pair.tokenizer), names)
        # A chat's prompt is its messages, a completion's its text or token ids: the list a chat has is messages.
        prompt = tooling.prompt(job.prompt) if job.chat and isinstance(job.prompt, list) else job.prompt  # type: ignore[arg-type]
        note = unseen_tools_note(tooling, pair.tokenizer)
        if note:
            job.deliver(Notice(note))
        if job.count_only:
            job.deliver(PromptCount(len(prompt_token_ids(pair.tokenizer, prompt, chat=job.chat,  # type: ignore[arg-type]  # chats only
                                                         tools=tooling.template_tools()))))
            return
        end_ids: frozenset[int] = frozenset()
        if job.suffix is not None:  # the middle between the prompt and the suffix, which ends at its format's ends
            prompt, end_ids = fim_prompt_ids(pair.tokenizer, prompt, job.suffix), fim_end_ids(pair.tokenizer)  # type: ignore[arg-type]  # completions only
        if job.echo_prompt:
            job.deliver(echoed_prompt(pair, prompt, names, job.params.logprobs, job.cancelled.is_set))  # type: ignore[arg-type]  # completions only
        events = (stream or generate_stream)(pair, prompt, constrained(tooling, job.params, pair.tokenizer), chat=job.chat,
                                             cancel=job.cancelled.is_set, tools=tooling.template_tools(), end_ids=end_ids)
        for event in events:
            _deliver(job, output, event)
    except BaseException as error:  # noqa: BLE001 - delivered to the request, never raised into the runner
        job.deliver(error)


def _deliver(job: GenerationJob, output: JobOutput, event: object) -> None:
    """An engine event, then the pieces of text and the calls it completes (all the rest before the result)."""
    if isinstance(event, RoundEvent) and job.cancelled.is_set():
        job.rounds_after_cancel += 1
    if isinstance(event, GenerationResult):
        for piece in output.finish(event):
            job.deliver(piece)
    job.deliver(event)
    if isinstance(event, TokenEvent):
        for piece in output.token(event):
            job.deliver(piece)


class JobOutput:
    """A job's streamed output as pieces: the reasoning apart, the answer through the tool-call splitter, each
    answer text piece carrying the logprobs of the tokens since the last one when asked for (those of a tool
    call's tokens are dropped with it: OpenAI gives logprobs for content only).

    The reasoning never reaches the splitter (a call the model thinks about is not a call). Its blank edges are
    held back, because the engine's `GenerationResult.reasoning` is stripped: the streamed reasoning then adds up
    to exactly the whole response's.
    """

    def __init__(self, splitter: OutputSplitter | FreeformSplitter, names: TokenNames | None = None) -> None:
        self.splitter = splitter
        self.reasoning = ""  # the reasoning delivered so far
        self._blank = ""  # whitespace held back at the reasoning's edge
        self._names = names
        self._pending: list[dict[str, Any]] = []

    def token(self, event: TokenEvent) -> list[AnswerPiece]:
        if event.part == "reasoning":
            return self._reasoning(event.text)
        if event.part != "answer":
            return []  # a marker has no text
        if self._names is not None and event.logprob is not None:
            self._pending.append(self._names.entry(event.logprob))
        return self._attach(self.splitter.feed(event.text))

    def _reasoning(self, text: str) -> list[AnswerPiece]:
        pending = self._blank + text
        kept = pending.rstrip()
        if not self.reasoning:
            kept = kept.lstrip()
        if not kept:
            self._blank = pending if self.reasoning else ""
            return []
        self._blank = pending[len(pending.rstrip()):]
        self.reasoning += kept
        return [ReasoningPiece(kept)]

    def finish(self, result: GenerationResult) -> list[AnswerPiece]:
        """The last pieces: what each part's detokenizer released only at the end, and the splitter's held text."""
        whole = result.reasoning
        rest = whole[len(self.reasoning):] if whole.startswith(self.reasoning) else ""
        pieces: list[AnswerPiece] = [ReasoningPiece(rest)] if rest else []
        return pieces + self._attach(self.splitter.feed(result.text[len(self.splitter.fed):]) + self.splitter.finish(cut=result.finish_reason in ("length", "context")))

    def _attach(self, pieces: Sequence[AnswerPiece]) -> list[AnswerPiece]:
        out: list[AnswerPiece] = []
        for piece in pieces:
            if isinstance(piece, TextPiece) and self._pending:
                piece = replace(piece, logprobs=tuple(self._pending))
            if not isinstance(piece, TextPiece) or piece.logprobs:
                self._pending = []
            out.append(piece)
        return out


@dataclass(frozen=True)
class Notice:
    """Something the request asked for that the job cannot honour, delivered before any other event: the server
    says it in the `X-SpecChat-Warning` header and its log rather than refusing the request."""

    text: str


@dataclass(frozen=True)
class PromptCount:
    """How many tokens a prompt is, as the model reads it (Anthropic's count_tokens): a count job's one event."""

    tokens: int


class CancelledBeforeStart(Exception):
    """The client went away while its job waited; it never ran."""


class NoModelLoaded(Exception):
    """The runner has no pair to generate with (the app's server before a pair is loaded)."""


def model_ids(target_name: str, target: str | None = None) -> list[str]:
    """The names a client may give as `model`: the target's display name first, then the name it was loaded by."""
    return [target_name] + ([target] if target and target != target_name else [])


_PROCESS_END = threading.Event()  # never set: what a finished engine thread waits for


class EngineThread:
    """`specchat-cli serve`'s runner: a thread that loads the pair and then runs jobs in order.

    Its work over (the pair let go, or the load failed: `ended`), the thread does not end but waits for the process
    to. A thread that called MLX's compiled functions (mlx-lm's sampler, a model's activations) keeps a thread-local
    compile cache holding Python objects, which the C++ runtime destroys as the OS thread ends: after Python has let
    the thread go (a `join` has returned), and taking the GIL to drop those objects. Were the interpreter finalizing
    by then, Python would end the thread inside that destructor and libstdc++ abort the process ("terminate called
    without an active exception"). A thread still waiting when the process exits is gone with it, cache and all.
    """

    def __init__(self, load: Callable[[], Any], target: str) -> None:
        self._load = load
        self._target = target
        self._jobs: queue.Queue[GenerationJob | None] = queue.Queue()
        self._ready = threading.Event()
        self._closing = threading.Event()  # the jobs are over: the pair is being let go
        self._ended = threading.Event()  # no MLX work is left on the thread
        self._ids: list[str] = []
        self.pair: Any = None
        self.load_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="specchat-engine", daemon=True)

    def start(self) -> None:
        """Start the thread and wait for the pair; raises what loading raised."""
        self._thread.start()
        self._ready.wait()
        if self.load_error is not None:
            raise self.load_error

    def submit(self, job: GenerationJob) -> None:
        self._jobs.put(job)

    def model_ids(self) -> list[str]:
        return list(self._ids)

    @property
    def ended(self) -> bool:
        """The thread has no MLX work left: the interpreter may be torn down around it."""
        return self._ended.is_set()

    def stop(self, timeout: float = JOB_GRACE_S, log: Callable[[str], None] | None = None) -> None:
        """Finish the running job (cancel it first to end it sooner), let the pair go (`ModelPair.close`: prefixes
        kept in memory are written to disk) and end the thread's work.

        Returns at once while the pair still loads, and after `timeout` if a job is still running: the thread then
        works on (`ended` is False) and the caller must end the process without tearing the interpreter down under
        it. Once the pair is being let go, though, this waits for it without a bound, saying so in `log` when it
        writes to a disk: the prompt cache's files are what a restart reads back, and writing a few GB of prefixes
        takes longer than any fixed grace. A second Ctrl-C interrupts the wait and quits without them."""
        pair = self.pair
        self._jobs.put(None)
        if pair is None or not self._closing.wait(timeout):
            return  # nothing loaded yet, or a job that would not end
        disk = getattr(getattr(pair, "prompt_cache", None), "disk", None)
        if log is not None and disk is not None and not self.ended:
            log(f"Waiting for the prompt cache's prefixes to be written to {disk.path} (Ctrl-C again quits without them)")
        self._ended.wait()

    def _run(self) -> None:
        try:
            self._work()
        finally:
            self._ended.set()
        _PROCESS_END.wait()  # never returns: see the class docstring

    def _work(self) -> None:
        try:
            self.pair = self._load()
            self._ids = model_ids(self.pair.target.display_name, self._target)
        except BaseException as error:  # noqa: BLE001 - raised again by start() on the caller's thread
            self.load_error = error
            return
        finally:
            self._ready.set()
        while (job := self._jobs.get()) is not None:
            run_job(self.pair, job)
        self._closing.set()
        self.pair.close()  # on this thread, which owns the pair's arrays: prefixes kept in memory go to disk
        self.pair = None  # the waiting thread keeps no model in memory


class QueueFull(Exception):
    """More jobs are waiting than the server allows."""


class Admission:
    """Counts the jobs the server holds (running and waiting) and refuses one beyond the bound."""

    def __init__(self, max_waiting: int) -> None:
        self.max_waiting = max_waiting
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        with self._lock:
            return self._held

    def enter(self) -> None:
        """Admit one job (the running one plus `max_waiting` behind it), or raise QueueFull."""
        with self._lock:
            if self._held > self.max_waiting:
                raise QueueFull()
            self._held += 1

    def leave(self) -> None:
        with self._lock:
            self._held -= 1
