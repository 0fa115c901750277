"""The chat session: everything about chatting that is not a widget.

It owns the two workers (engine and downloads) and their threads, the saved conversations and settings, the
loaded pair, the generation settings with the mode and the drafter chosen for the pair, and the answer being generated: its
request id, where its events go (the chat or Compare), its text and token runs as they stream, and saving them
after every batch, so that Stop, a crash or `kill -9` loses at most the round in flight. The window shows the
session and forwards the user's actions to it; tests drive it without any widget.

Worker signals are only ever connected to bound methods of QObjects living on the GUI thread (this one, the
window, the dialogs): PySide6 runs a plain function or lambda in the emitting thread.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QObject, Signal

from engine.attachments import Attached
from engine.comparison import STANDARD, check_sides, compare_messages, compared_params, side_params
from engine.conversation_title import automatic_title
from engine.conversations import AFTER_LAST, ConversationStore, StoredMessage, database_path
from engine.events import GenerationResult, RoundEvent
from engine.params import GenerationParams

from .across_macs import AcrossMacs, loading_line
from .chat_tools import ChatTools
from .download_worker import DownloadWorker
from .pair_label import pair_label
from .settings import AppSettings
from .streaming_answer import StreamingAnswer
from .worker import EngineWorker, GenerationRequest, PairInfo, start_in_thread, stop_thread


class _Requests(QObject):
    """Signals from the session to the engine worker (queued into its thread)."""

    load = Signal(int, str, str, str)
    generate = Signal(object)
    release = Signal()


class ChatSession(QObject):
    """SpecChat's state and actions, without widgets.

    Signals (all emitted on the GUI thread):
        pair_loading(str): a pair started loading; the text says which. The loaded pair keeps working.
        pair_loaded(PairInfo): a pair finished loading.
        pair_failed(str): a pair could not be loaded (the one loaded before stays); the message says why.
        load_progress(str, int, int): a loading stage with done and total.
        load_cancelled(str): the user cancelled a load (in any of its stages); the text says so. The loaded pair stays.
        answer_started(StreamingAnswer), answer_events(StreamingAnswer, list): a chat answer and its events.
        answer_running(StreamingAnswer): the worker took the answer up (after any Local server request it waited
            for: `answer.waiting` says whether it does, `answer.waited_s` how long it did).
        answer_finished(StreamingAnswer, GenerationResult, str): a chat answer is complete (stopped too), its stats.
        answer_failed(StreamingAnswer, str): a chat answer failed; the message says why.
        prompt_rejected(int, str, str): the conversation, the text of the user message the model could not
            take (too long: it was taken out of the conversation, to be edited) and why.
        compare_events(int, list), compare_finished(int, GenerationResult), compare_failed(int, str): the same
            for the two requests of a Compare, by request id.
        busy_changed(bool): whether an answer is being generated.
        storage_failed(str): conversations are kept in memory from now on; the message says how to fix it.
        kept_error(str): an error shown again after a pair loaded in the place of one across Macs (a Mac left).
    """

    pair_loading = Signal(str)
    pair_loaded = Signal(object)
    pair_failed = Signal(str)
    load_cancelled = Signal(str)
    load_progress = Signal(str, object, object)  # byte counts: past a 32-bit int for any model over 2 GB
    answer_started = Signal(object)
    answer_running = Signal(object)
    answer_events = Signal(object, object)
    answer_finished = Signal(object, object, str)
    answer_failed = Signal(object, str)
    prompt_rejected = Signal(int, str, str)
    compare_events = Signal(int, object)
    compare_finished = Signal(int, object)
    compare_failed = Signal(int, str)
    busy_changed = Signal(bool)
    storage_failed = Signal(str)
    kept_error = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = AppSettings()
        self.store = ConversationStore(database_path(), on_degraded=self.storage_failed.emit)
        self.params = self.settings.params()
        self.system_prompt = self.settings.system_prompt()
        self.new_chat_think: bool | None = None  # the Think switch of a chat not saved yet (None: the default)
        self.pair: PairInfo | None = None
        self.drafter_note = ""  # why the drafter pinned for the pair just loaded was set aside ("": it was not)
        self.loading = self.cancelling_load = False  # cancelling: Cancel was clicked, the load ends at its next step
        self._loads = 0  # the loads asked for, numbered so that a cancel ends the one running and any queued
        self.answer: StreamingAnswer | None = None  # an answer that called tools stays while its calls run
        self.tools = ChatTools(self, self._idle)
        self.across = AcrossMacs(self.settings, self.load_pair, self.kept_error.emit)
        self.compare_requests: dict[str, int] = {}
        self._compares = 0
        self._next_request, self._closed = 0, False
        self.engine, self.downloads = EngineWorker(), DownloadWorker()
        self.engine_thread, self.download_thread = start_in_thread(self.engine, "engine"), start_in_thread(self.downloads, "downloads")
        self._requests = _Requests()
        r, e = self._requests, self.engine
        for signal, slot in ((r.load, e.load), (r.generate, e.generate), (r.release, e.release_cluster),
                             (e.load_finished, self._on_loaded), (e.load_errored, self._on_load_failed),
                             (e.load_progress, self._on_load_progress), (e.load_cancelled, self._on_load_cancelled),
                             (e.generation_started, self._on_started), (e.generation_yielded, self._on_events),
                             (e.generation_finished, self._on_finished), (e.generation_errored, self._on_error)):
            signal.connect(slot)

    # --- state ---------------------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """Whether a chat answer is being generated (or the tools it called run)."""
        return self.answer is not None

    @property
    def ready(self) -> bool:
        """Whether a message can be sent now: a pair is loaded, nothing loads or answers."""
        return self.pair is not None and not self.loading and not self.busy

    def set_mode(self, mode: str) -> None:
        """Speculative or standard decoding from the next answer on (remembered)."""
        self.params = self.params.replace(mode=mode)
        self.settings.save_params(self.params)

    def choose_drafter(self, drafter: str) -> None:
        """Draft with `drafter` ("auto": Automatic) from the next answer on; remembered for the loaded pair."""
        self.params = self.params.replace(drafter=drafter)
        if self.pair is not None:
            self.settings.save_pinned_drafter(self.pair.target, self.pair.draft, drafter)

    def apply_settings(self, params: GenerationParams, system_prompt: str) -> None:
        """Use new settings from the next answer on, and remember them."""
        self.params = params
        self.system_prompt = system_prompt
        self.settings.save_params(params)
        self.settings.save_system_prompt(system_prompt)

    def describe_pair(self) -> str:
        """The loaded models and how the next answer will be decoded, for the window's label."""
        return pair_label(self.pair, self.params if self.pair else None, self.loading)

    def history(self, conversation_id: int | None) -> list[dict[str, str]]:
        """A conversation as the engine reads it (`StoredMessage.model_messages`; answers that failed before any text are left out)."""
        if conversation_id is None:
            return []
        return [message for m in self.store.messages(conversation_id) if m.content or m.role == "user" for message in m.model_messages()]

    def compare_messages(self, conversation_id: int | None, typed: str) -> list[dict[str, str]]:
        """What Compare runs from this conversation (`engine.comparison.compare_messages`)."""
        return compare_messages(self.history(conversation_id), typed)

    def think_for(self, conversation_id: int | None) -> bool:
        """Whether a thinking model thinks in this chat: its own Think switch, or the default from Settings."""
        own = self.store.think(conversation_id) if conversation_id is not None else self.new_chat_think
        return self.params.think if own is None else own

    def set_think(self, conversation_id: int | None, on: bool) -> None:
        """The chat's Think switch (for a chat not saved yet: kept until its first message saves it)."""
        if conversation_id is None:
            self.new_chat_think = on
        else:
            self.store.set_think(conversation_id, on)

    def system_prompt_for(self, conversation_id: int | None) -> str:
        """The conversation's own system prompt, or the one from Settings."""
        own = self.store.system_prompt(conversation_id) if conversation_id is not None else ""
        return own or self.system_prompt

    # --- models --------------------------------------------------------------------------------------------

    def load_pair(self, target: str, draft: str) -> None:
        """Load a pair on the engine worker (across Macs when the setting is on), stopping a running answer first;
        the loaded pair works until then."""
        self.stop()
        self.loading, self.cancelling_load = True, False
        self._loads += 1
        self.pair_loading.emit(loading_line(target, draft, self.across.hosts))
        self._requests.load.emit(self._loads, target, draft, self.across.hosts)

    def _on_loaded(self, info: PairInfo) -> None:
        if self._closed:
            return
        self.pair, self.loading, self.cancelling_load = info, False, False
        drafter, self.drafter_note = self.settings.restored_drafter(info.target, info.draft, info.drafters)
        self.params = self.params.replace(drafter=drafter)
        self.settings.save_pair(info.target, info.draft)
        self.pair_loaded.emit(info)
        self.across.loaded()

    def _on_load_failed(self, message: str) -> None:
        if not self._closed:
            self.loading = self.cancelling_load = False
            self.pair_failed.emit(self.across.load_failed(message))

    def cancel_load(self) -> None:
        """Stop the load at its next step, in whichever stage it is; called directly, not queued behind it."""
        self.cancelling_load = self.engine.cancel_load(self._loads)  # False: loaded already, pair_loaded is on its way

    def _on_load_cancelled(self, stage: str) -> None:
        if not self._closed:
            self.loading = self.cancelling_load = False
            kept = " The models loaded before are still in use." if self.pair else ""
            self.load_cancelled.emit(f"Cancelled while {stage[:1].lower()}{stage[1:]}." + kept)

    def _on_load_progress(self, stage: str, done: int, total: int) -> None:
        if not self._closed:
            self.load_progress.emit(stage, done, total)

    # --- answers -------------------------------------------------------------------------------------------

    def _new_request(self, conversation_id: int | None, messages: list[dict[str, str]], params: GenerationParams,
                     fresh_cache: bool = False, tools: list[dict] | None = None) -> GenerationRequest:
        self._next_request += 1
        return GenerationRequest(self._next_request, messages, params, self.system_prompt_for(conversation_id), fresh_cache, tools)

    def new_conversation(self, first_message: str) -> int:
        """A new saved conversation, titled after its first message (with the Think switch set before it)."""
        conversation_id = self.store.create(automatic_title(first_message))
        if self.new_chat_think is not None:
            self.store.set_think(conversation_id, self.new_chat_think)
            self.new_chat_think = None
        return conversation_id

    def send(self, conversation_id: int, text: str, attachments: tuple[Attached, ...] = ()) -> None:
        """Save the user's message (with the files attached to it) and start its answer."""
        self.store.add_message(conversation_id, "user", text, attachments=attachments)
        self.start_answer(conversation_id)

    def edit(self, message_id: int, text: str) -> int | None:
        """Ask an earlier question differently, with its files: a new branch from there (the old one kept), answered now."""
        conversation_id = self.store.conversation_of(message_id)
        if self.busy or conversation_id is None:
            return None
        files = next((tuple(m.attachments) for m in self.store.messages(conversation_id) if m.id == message_id), ())
        self.store.add_message(conversation_id, "user", text, parent_id=self.store.parent_of(message_id), attachments=files)
        self.start_answer(conversation_id)
        return conversation_id

    def start_answer(self, conversation_id: int, parent_id: int | None = AFTER_LAST, cut: StoredMessage | None = None) -> None:
        """Answer the last question (as a new branch under `parent_id` when given), or go on with the `cut` answer."""
        params = self.params.replace(think=self.think_for(conversation_id))
        # Added first: as the branch shown, it hides an answer it replaces (and, empty, is not in the history).
        message_id = cut.id if cut else self.store.add_message(conversation_id, "assistant", "", parent_id=parent_id)
        request = self._new_request(conversation_id, self.history(conversation_id), params, tools=self.tools.offered())
        self.answer = StreamingAnswer(request.request_id, conversation_id, message_id, params.mode,
                                      lenience=params.applied_lenience, waiting=self.engine.server_jobs > 0).going_on_from(cut)
        self.answer_started.emit(self.answer)
        self.busy_changed.emit(True)
        self._requests.generate.emit(request)

    def regenerate(self, conversation_id: int) -> bool:
        """Answer the last question again; the old answer stays as a branch. False when there is nothing to do."""
        messages = self.store.messages(conversation_id)
        if self.busy or not messages or messages[-1].role != "assistant":
            return False
        self.start_answer(conversation_id, parent_id=messages[-1].parent_id)
        return True

    def continue_answer(self, message_id: int) -> bool:
        """Go on with an answer that ended short of its own end (its chat's last; `answer_ends.can_go_on`): the same
        message grows, its new rounds numbered after its old ones. False when it cannot go on, or not now."""
        conversation_id = self.store.conversation_of(message_id)
        if conversation_id is None or not self.ready:
            return False
        thread = self.store.messages(conversation_id)
        if not thread or thread[-1].id != message_id or not thread[-1].continuable:
            return False
        self.start_answer(conversation_id, cut=thread[-1])
        return True

    def select_branch(self, message_id: int, step: int) -> None:
        """Show the previous (-1) or next (+1) version of a message and what followed it."""
        if not self.busy:
            self.store.select_branch(message_id, step)

    def delete_message(self, message_id: int) -> None:
        """Delete a message and what followed it on its branch (not while an answer is generated)."""
        if not self.busy:
            self.store.delete_message(message_id)

    def stop(self) -> None:
        """Stop the running answer within one round (what was generated is kept)."""
        if self.answer is not None:
            self.engine.cancel(self.answer.request_id)
            self.answer.stopping = True
            self.busy_changed.emit(True)
            self.tools.stop()

    def stop_compare(self) -> None:
        """Stop the last Compare's two runs (the worker cancels every request up to its last; no chat answer runs)."""
        if self.compare_requests:
            self.engine.cancel(max(self.compare_requests.values()))

    def compare_sides(self) -> tuple[str, str]:
        """What a Compare runs unless the user picks otherwise: standard decoding against the next answer's drafter."""
        return STANDARD, self.params.drafter

    def compare(self, conversation_id: int | None, messages: list[dict[str, str]],
                sides: tuple[str, str] | None = None) -> dict[str, int]:
        """Run a conversation two ways (each side "standard" or a drafter, `compare_sides()` by default) with the same
        settings otherwise; the request id of each side, in run order. Both start from an empty prompt cache (else the
        second reuses the first's prompt), in an order alternating between Compares (neither always runs warmed up)."""
        sides = sides or self.compare_sides()
        check_sides(*sides)
        params = compared_params(self.params.replace(think=self.think_for(conversation_id)))
        order = sides if self._compares % 2 == 0 else sides[::-1]
        self._compares += 1
        requests = {side: self._new_request(conversation_id, messages, side_params(params, side), fresh_cache=True)
                    for side in order}
        self.compare_requests = {side: request.request_id for side, request in requests.items()}
        for request in requests.values():
            self._requests.generate.emit(request)
        return dict(self.compare_requests)

    def _answer_for(self, request_id: int) -> StreamingAnswer | None:
        """The chat answer the request is (None: a Compare's, or one the user left and a new one replaced)."""
        return self.answer if not self._closed and self.answer is not None and request_id == self.answer.request_id else None

    def _is_compare(self, request_id: int) -> bool:
        return not self._closed and request_id in self.compare_requests.values()

    def _on_started(self, request_id: int) -> None:
        if (answer := self._answer_for(request_id)) is not None:
            answer.start_running()
            self.answer_running.emit(answer)

    def _on_events(self, request_id: int, events: list[object]) -> None:
        if self._is_compare(request_id):
            self.compare_events.emit(request_id, events)
        if (answer := self._answer_for(request_id)) is None:
            return
        events = answer.numbered(events)
        tokens = answer.add_events(events)
        answer.trace += [e.trace_record() for e in events if isinstance(e, RoundEvent)]
        if tokens:
            self._save(answer, finish="")
        self.answer_events.emit(answer, events)

    def _save(self, answer: StreamingAnswer, finish: str, summary: str = "") -> None:
        """Save the answer so far. The text and runs are saved with every batch (nothing is lost to a crash); the
        trace, the bulk of an answer's data, once it ends, so a long answer's saves stay cheap."""
        trace = answer.trace if finish else None
        self.store.update_message(answer.message_id, answer.text, answer.runs, summary, finish, trace, answer.reasoning,
                                  answer.reasoning_s)

    def _on_finished(self, request_id: int, result: GenerationResult) -> None:
        if self._is_compare(request_id):
            self.compare_finished.emit(request_id, result)
        if (answer := self._answer_for(request_id)) is None:
            return
        answer.take_result(result)
        summary = answer.summary(result)
        self._save(answer, result.finish_reason, summary)
        if not self.tools.take(answer, result):  # an answer that called tools runs on until its calls are done
            self._idle()
        self.answer_finished.emit(answer, result, summary)

    def _on_error(self, request_id: int, message: str, kind: str) -> None:
        if self._is_compare(request_id):
            self.compare_failed.emit(request_id, message)
        if (answer := self._answer_for(request_id)) is None:
            return
        if answer.text:
            self._save(answer, "error", "(interrupted by an error)")
        else:
            self.store.delete_message(answer.message_id)
        if kind == "DistributedError":
            message, self.pair = self.across.mac_left(self.pair, message)
        self._idle()
        self.answer_failed.emit(answer, message)
        if kind in ("PromptError", "PromptTooLongError") and not answer.text:  # the question goes back to be shortened
            if (question := self.store.take_back_question(answer.conversation_id)) is not None:
                self.prompt_rejected.emit(answer.conversation_id, question, message)

    def _idle(self) -> None:
        self.answer = None
        self.busy_changed.emit(False)

    # --- shutting down -------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Cancel what runs, quit and wait for both worker threads (no "QThread destroyed while running"),
        deliver the events they sent on the way out (a stopped answer is saved whole), then close the store."""
        if self._closed:
            return
        self.engine.cancel(self._next_request)
        self.tools.shutdown()
        self.downloads.cancel()
        self._requests.release.emit()  # the other Macs of a pipeline leave with a goodbye, not a lost head
        stop_thread(self.engine_thread)
        stop_thread(self.download_thread)
        QCoreApplication.sendPostedEvents(self)
        if self.answer is not None:
            self._save(self.answer, "cancelled", "(interrupted)")
        self.store.close()
        self._closed = True
