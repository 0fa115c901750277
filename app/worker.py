"""The engine worker: one long-lived QThread that owns every MLX object.

MLX streams belong to the thread that made them, so loading and generating both happen here; the GUI thread
only sends requests (queued signals) and receives events. Token events are batched, at most about 60 emits
a second, so a fast model cannot flood the GUI's event loop. Cancellation does not queue behind the running
generation: `cancel()` is called directly from the GUI thread and is seen between rounds.

Worker signals (here and in `download_worker.py`) are named `<task>_<event>`, the event one of `progress`,
`yielded` (a batch of results), `finished`, `errored` or `cancelled`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QThread, Signal, Slot

from engine.attachments import CountTokens, token_counter
from engine.errors import DistributedError, LoadCancelled, UnsupportedModelError
from engine.events import GenerationResult
from engine.models.draft_choice import drafter_for, shown_draft_name
from engine.params import GenerationParams

from .readable_errors import error_kind, readable_error

if TYPE_CHECKING:
    from engine.drafters.draft_checks import DraftChecks

BATCH_INTERVAL_S = 1 / 60
FindCalls = Callable[[list[dict], str], tuple[str, list]]  # (tools, answer) -> (text, ToolCalls)


@dataclass
class GenerationRequest:
    """One generation for the worker.

    Attributes:
        request_id: increasing id; events and results carry it back.
        messages: the conversation, ending with the user's turn.
        params: generation settings.
        system_prompt: prepended when not empty.
        fresh_cache: start from empty prompt caches, and leave the answer out of the history (Compare: both runs
            from the same state).
        tools: the MCP tools offered to the model (OpenAI's function shape, for the chat template), or None.
    """

    request_id: int
    messages: list[dict[str, str]]
    params: GenerationParams
    system_prompt: str = ""
    fresh_cache: bool = False
    tools: list[dict] | None = None


@dataclass
class PairInfo:
    """What the GUI may know about the loaded pair (no MLX objects).

    `draft_weight_share` is the draft's weights' size over the target's (0 without a draft): what a draft step
    costs on a memory-bound GPU, in target steps, for the cost card's Apple prediction. `thinks`: the target
    writes reasoning between think markers; `can_switch_thinking`: its template can turn that off. `base_model`:
    the target has no chat template (chats reach it as a transcript it continues). `drafter`: what is loaded as the
    draft ("model", "dflash", "dspark", "eagle3"; "" without a draft). `macs`: how
    many Macs the target runs across (1: this one alone), `layout` which Mac runs which layers (a sentence);
    `weights_gb`: the pair's weights on disk (whether it would fit this Mac alone). `count_tokens`: the target's
    tokenizer counting a text's tokens (attached files'; it only reads the tokenizer, so any thread may call it).
    `drafters`: every single drafter the pair can draft with (lookup, the draft model, the target's heads...).
    `sees_images`: the target has a vision tower (engine/models/vision.py) and reads the images of a message.
    `calls_tools`: the target's chat template shows tools to the model; `find_calls(tools, answer)`: the answer's
    text without its calls and the calls to those tools (engine/mcp_tools/tool_turn.calls_in: it only reads the
    tokenizer, as `count_tokens` does).
    """

    target: str
    draft: str | None
    target_name: str
    draft_name: str | None
    warnings: list[str] = field(default_factory=list)
    context_length: int = 0
    draft_weight_share: float = 0.0
    thinks: bool = False
    can_switch_thinking: bool = False
    base_model: bool = False
    drafter: str = ""
    macs: int = 1
    layout: str = ""
    weights_gb: float = 0.0
    count_tokens: CountTokens | None = None
    drafters: tuple[str, ...] = ("lookup",)
    sees_images: bool = False
    calls_tools: bool = False
    find_calls: FindCalls | None = None


@dataclass
class MemoryReading:
    """MLX's peak memory so far, read on the worker thread and sent with a batch of events."""

    peak_gb: float


@dataclass
class DraftVerdict:
    """Whether a candidate draft can draft for a target, and why not."""

    name: str
    compatible: bool
    reason: str


class EngineWorker(QObject):
    """Loads models and generates, on its own thread.

    Signals:
        load_progress(str, int, int): a loading stage (a GGUF import's, a model's loading) with done and total
            (total 0: the stage cannot say how far it is).
        load_finished(PairInfo): a pair finished loading.
        load_errored(str): loading failed; the message says why and what to do.
        load_cancelled(str): the user cancelled the load; the stage it was at ("Importing x.gguf").
        generation_started(int): the worker started on a request (it may have waited for a Local server job).
        generation_yielded(int, list): a batch of engine events (tokens, rounds, prefill) for a request.
        generation_finished(int, GenerationResult): a request is done (including cancelled ones).
        generation_errored(int, str, str): a request failed; the message says why and what to do, the kind is
            the engine error's name ("PromptError", ...) or "".
        drafts_check_progress(str, int, int): a target's drafts checked so far, of how many.
        drafts_check_import(str, str, int, int): a GGUF file imported before it can be checked (the target being
            checked, the import's stage, done, total; total 0: a stage that cannot say how far it is).
        drafts_check_finished(str, list): DraftVerdicts for a target's candidate drafts.
    """

    load_progress = Signal(str, object, object)  # byte counts: past a 32-bit int for any model over 2 GB
    load_finished = Signal(object)
    load_errored = Signal(str)
    load_cancelled = Signal(str)
    generation_started = Signal(int)
    generation_yielded = Signal(int, object)
    generation_finished = Signal(int, object)
    generation_errored = Signal(int, str, str)
    drafts_check_progress = Signal(str, int, int)
    drafts_check_import = Signal(str, str, int, int)
    drafts_check_finished = Signal(str, object)

    def __init__(self) -> None:
        super().__init__()
        self.pair = None  # engine.decoding.pair.ModelPair, only ever touched on this worker's thread
        self.cluster = None  # engine.distributed.app_head.AppHead while the target runs across Macs
        self._cancel_up_to = -1
        self._server_jobs = 0  # Local server jobs handed to this worker and not yet done
        self._lock = threading.Lock()
        self._draft_checks: DraftChecks | None = None  # read from disk on the first check
        self.history_indexing: threading.Thread | None = None  # the saved chats, indexed for lookup drafting
        self._load_cancel_up_to = -1  # loads are numbered by the session; a cancel ends every one up to its number
        self._load_id = 0  # the load running (or the last one)
        self._load_kept = 0  # the last load whose pair replaced the one in use: too late to cancel
        self._load_stage = ""  # the stage the running load reported last: where a cancel finds it

    def cancel(self, up_to_request: int) -> None:
        """Cancel every request with an id up to this one (thread-safe; seen between rounds)."""
        with self._lock:
            self._cancel_up_to = max(self._cancel_up_to, up_to_request)

    def cancel_load(self, up_to_load: int) -> bool:
        """Cancel the loads numbered up to this one (thread-safe), whether running or still queued: the running
        one ends at its next stage or progress step (a GGUF import keeps nothing), or once loaded, before it
        replaces the pair in use. False when the last of them has replaced it already (its pair_loaded is on its
        way): too late, nothing is cancelled."""
        with self._lock:
            if self._load_kept >= up_to_load:
                return False
            self._load_cancel_up_to = max(self._load_cancel_up_to, up_to_load)
            return True

    def _load_is_cancelled(self, keep: bool = False) -> bool:
        """Whether the running load is cancelled; with `keep`, if not, its pair is kept from now on (no cancel
        after this can take it back, so a cancel either wins or is refused, never accepted and ignored)."""
        with self._lock:
            cancelled = self._load_id <= self._load_cancel_up_to
            if keep and not cancelled:
                self._load_kept = self._load_id
            return cancelled

    def _load_progress(self, stage: str, done: int, total: int) -> None:
        """Report a loading stage's progress, or end the load if the user cancelled it (in the stage before)."""
        if self._load_is_cancelled():
            raise LoadCancelled(self._load_stage or stage)
        self._load_stage = stage
        self.load_progress.emit(stage, done, total)

    def _cancelled(self, request_id: int) -> bool:
        with self._lock:
            return request_id <= self._cancel_up_to

    @property
    def server_jobs(self) -> int:
        """Local server jobs queued on or running in this worker: a chat request sent now waits for them."""
        with self._lock:
            return self._server_jobs

    def count_server_job(self, change: int) -> None:
        """A server job was handed over (+1, on the server's thread) or is done (-1, here)."""
        with self._lock:
            self._server_jobs += change

    @Slot(int, str, str, str)
    def load(self, load_id: int, target: str, draft: str, hosts: str = "") -> None:
        """Load a pair beside the current one, which keeps working if the new one fails to load or is cancelled;
        with `hosts` (an mlx.launch hostfile), the target across those Macs (the pair before is let go once the new
        one runs)."""
        from engine.conversations import saved_chats
        from engine.decoding.drafting.history_lookup import start_indexing

        with self._lock:
            self._load_id = load_id
        self._load_stage = ""
        try:
            pair, cluster = self._load_pair(target, draft, hosts)
            drafters = runnable_drafters(pair)
            if self._load_is_cancelled(keep=True):  # a cancel after the last stage's report still wins
                if cluster is not None:
                    cluster.close()
                raise LoadCancelled(self._load_stage or f"Loading {Path(target).name}")
        except LoadCancelled as cancelled:
            self.load_cancelled.emit(str(cancelled))
            return
        except BaseException as error:  # noqa: BLE001 - reported, never raised into Qt
            self.load_errored.emit(readable_error(error))
            return
        self.release_cluster()
        self.pair, self.cluster = pair, cluster
        self.history_indexing = start_indexing(pair.history, pair.target.path, saved_chats, pair.idle)
        self.load_finished.emit(self._describe(pair, target, draft, drafters))

    def _load_pair(self, target: str, draft: str, hosts: str):  # (ModelPair, AppHead | None)
        from engine.decoding.pair import ModelPair

        if not hosts:
            return ModelPair.load(target, draft or None, progress=self._load_progress), None
        from engine.distributed.app_head import start_head

        self.load_progress.emit("Starting SpecChat on the other Macs", 0, 0)
        cluster = start_head(Path(hosts), target, draft or None)
        return cluster.session.pair, cluster

    def _describe(self, pair, target: str, draft: str, drafters: tuple[str, ...]) -> PairInfo:  # ModelPair
        from engine.decoding.prompt_ids import template_reads_tools
        from engine.mcp_tools.tool_turn import calls_in
        from engine.models.memory import folder_size_gb

        return PairInfo(
            target=target,
            draft=draft or None,
            target_name=pair.target.display_name,
            draft_name=pair.draft.display_name if pair.draft else shown_draft_name(draft),
            warnings=list(pair.check.warnings),
            context_length=pair.context_length,
            draft_weight_share=pair.draft_weight_share,
            thinks=pair.think_markers is not None,
            can_switch_thinking=pair.can_switch_thinking,
            base_model=pair.is_base_model,
            drafter=drafter_for(draft),
            macs=self.cluster.macs if self.cluster else 1,
            layout=self.cluster.session.describe().replace("the", "The", 1) + "." if self.cluster else "",
            weights_gb=sum(folder_size_gb(m.path) for m in (pair.target, pair.draft) if m is not None),
            count_tokens=token_counter(pair.tokenizer),
            drafters=drafters,
            sees_images=pair.target.sight is not None,
            calls_tools=template_reads_tools(pair.tokenizer),
            find_calls=partial(calls_in, pair.tokenizer),
        )

    @Slot()
    def release_cluster(self) -> None:
        """Stop the other Macs of a pair across Macs (its pair goes with them); nothing on one Mac."""
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            if self.pair is cluster.session.pair:
                self.pair = None
            cluster.close()

    @Slot(object)
    def generate(self, request: GenerationRequest) -> None:
        from engine.decoding.generation import generate_stream
        from engine.models.memory import peak_memory_gb

        if self.pair is None:
            self.generation_errored.emit(request.request_id, "No models are loaded: choose a pair with Models… first.", "")
            return
        self.generation_started.emit(request.request_id)
        batch: list[object] = []
        last_emit = time.monotonic()
        try:
            if request.fresh_cache:
                self.pair.reset_caches()
            stream = generate_stream(
                self.pair,
                request.messages,
                request.params,
                system_prompt=request.system_prompt or None,
                cancel=lambda: self._cancelled(request.request_id),
                comparing=request.fresh_cache,  # neither run drafts from the other's answer, nor from saved ones
                tools=request.tools,
            )
            for event in stream:
                if isinstance(event, GenerationResult):
                    if batch:
                        self.generation_yielded.emit(request.request_id, batch)
                    self.generation_finished.emit(request.request_id, event)
                    return
                batch.append(event)
                now = time.monotonic()
                if now - last_emit >= BATCH_INTERVAL_S:
                    batch.append(MemoryReading(peak_memory_gb()))
                    self.generation_yielded.emit(request.request_id, batch)
                    batch, last_emit = [], now
        except BaseException as error:  # noqa: BLE001 - reported, never raised into Qt
            if batch:
                self.generation_yielded.emit(request.request_id, batch)
            if isinstance(error, DistributedError):
                self.release_cluster()  # a Mac left: the pipeline cannot carry another pass
            self.generation_errored.emit(request.request_id, readable_error(error), error_kind(error))

    @Slot(object)
    def serve_job(self, job) -> None:  # engine.serving.generation_queue.GenerationJob
        """Generate a Local server request with the loaded pair; the job's callback takes every event."""
        from engine.serving.generation_queue import NoModelLoaded, run_job

        try:
            if self.pair is None:
                job.deliver(NoModelLoaded())
            else:
                run_job(self.pair, job)
        finally:
            self.count_server_job(-1)

    @Slot(str, object)
    def check_drafts(self, target: str, candidates: list[str]) -> None:
        """Check candidate drafts against a target (remembered across launches while their files are unchanged):
        draft models by their tokenizers, drafter folders by their configs, the target's own MTP heads by its
        config; how many are checked is reported as it goes, and so is a GGUF file's import (the first check of a GGUF
        target imports it, which took minutes under "0 of 1 checked…")."""
        from engine.drafters.draft_checks import DraftChecks

        self._draft_checks = self._draft_checks or DraftChecks()
        verdicts = []

        def importing(stage: str, done: int, total: int) -> None:
            self.drafts_check_import.emit(target, stage, done, total)

        for done, name in enumerate(candidates):
            self.drafts_check_progress.emit(target, done, len(candidates))
            try:
                check = self._draft_checks.check(target, name, importing)
                verdicts.append(DraftVerdict(name, check.compatible, "; ".join(check.reasons)))
            except BaseException as error:  # noqa: BLE001 - a broken candidate is just not offered
                verdicts.append(DraftVerdict(name, False, readable_error(error)))
        self.drafts_check_finished.emit(target, verdicts)


def runnable_drafters(pair) -> tuple[str, ...]:  # ModelPair
    """Every single drafter the pair can draft with, the target's built-in heads loaded now (not in the first answer
    that drafts with them); heads its config declares but its files lack (a conversion that dropped the mtp.* tensors)
    are left out, so that the Drafter choice never offers a drafter that cannot run."""
    from engine.drafter_kinds import kind

    runnable = []
    for name in pair.drafter_names():
        if kind(name).pairs_with == "built-in":
            try:
                pair.drafter_state(name)
            except UnsupportedModelError:
                continue
        runnable.append(name)
    return tuple(runnable)


def start_in_thread(worker: QObject, name: str) -> QThread:
    """Move a worker to a new started thread (stop it with `stop_thread`)."""
    thread = QThread()
    thread.setObjectName(name)
    worker.moveToThread(thread)
    thread.start()
    return thread


def stop_thread(thread: QThread, timeout_ms: int = 30_000) -> bool:
    """Quit a worker thread after its current slot and wait for it; True if it ended in time."""
    thread.quit()
    return thread.wait(timeout_ms)
