"""The main window: conversations, the chat column, the live speculation panel, and the controls.

The window never touches MLX. It sends requests to the engine worker (loading, generating) and the download
worker, and turns their events into text, colours and numbers. An answer is saved while it streams, so Stop
or a crash keeps what was generated.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeyEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from engine.models.app_paths import data_dir
from engine.events import GenerationResult, TokenEvent
from engine.params import GenerationParams

from .chat_view import ChatView, MessageWidget, TokenRun
from .compare_dialog import CompareDialog
from .conversation_list import ConversationList
from .conversations import ConversationStore
from .download_worker import DownloadWorker
from .pair_picker import PairPickerDialog
from .settings import AppSettings
from .settings_dialog import SettingsDialog
from .stats_panel import StatsPanel
from .worker import EngineWorker, GenerationRequest, PairInfo, start_in_thread, stop_thread

SAVE_INTERVAL_S = 1.0


class ChatInput(QPlainTextEdit):
    """The message box: Enter sends, Shift+Enter starts a new line.

    Signals:
        submitted(): Enter was pressed.
    """

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText("Message (Enter sends, Shift+Enter for a new line)")
        self.setMaximumHeight(110)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class _Requests(QObject):
    """Signals from the window to the workers (queued into their threads)."""

    load = Signal(str, str)
    generate = Signal(object)


class MainWindow(QMainWindow):
    """SpecChat's window.

    Worker signals are only ever connected to bound methods of this window (or its dialogs): PySide6 runs a
    plain function or lambda in the emitting thread, which must never touch widgets.

    Signals (all emitted on the GUI thread):
        pair_loaded(PairInfo): a pair finished loading.
        events_received(int, list): a batch of engine events for a request.
        answer_finished(GenerationResult): a chat answer is complete (stopped ones included).
        answer_failed(str): a chat answer failed; the message is shown in the window.

    Attributes:
        engine, downloads: the workers (each on its own QThread).
        store: the saved conversations.
        settings: what is remembered across launches.
        pair: what is loaded (None until a pair is).
        conversation_id: the conversation shown.
        active_request: the chat request being generated (None when idle).
    """

    pair_loaded = Signal(object)
    events_received = Signal(int, object)
    answer_finished = Signal(object)
    answer_failed = Signal(str)

    def __init__(self, open_picker_if_needed: bool = True) -> None:
        super().__init__()
        self.setWindowTitle("SpecChat")
        self.resize(1280, 800)
        self.settings = AppSettings()
        self.store = ConversationStore(data_dir() / "conversations.sqlite3")
        self.params = self.settings.params()
        self.system_prompt = self.settings.system_prompt()
        self.pair: PairInfo | None = None
        self.conversation_id: int | None = None
        self.active_request: int | None = None
        self.answer: MessageWidget | None = None
        self.answer_message_id: int | None = None
        self._next_request = 0
        self._last_save = 0.0
        self.compare_dialog: CompareDialog | None = None
        self._shutting_down = False
        self._shut_down = False  # the store is closed: late events are ignored

        self.engine = EngineWorker()
        self.downloads = DownloadWorker()
        self.engine_thread = start_in_thread(self.engine, "engine")
        self.download_thread = start_in_thread(self.downloads, "downloads")
        self.requests = _Requests()
        self.requests.load.connect(self.engine.load)
        self.requests.generate.connect(self.engine.generate)
        self.engine.loaded.connect(self._on_loaded)
        self.engine.load_failed.connect(self._on_load_failed)
        self.engine.progress.connect(self._on_load_progress)
        self.engine.yielded.connect(self._on_events)
        self.engine.finished.connect(self._on_finished)
        self.engine.errored.connect(self._on_error)

        self._build()
        self.picker = PairPickerDialog(self.engine, self.downloads, self)
        self.picker.pair_chosen.connect(self.load_pair)
        self.conversations.refresh()
        saved = self.settings.pair()
        if saved:
            self.load_pair(*saved)
        elif open_picker_if_needed:
            QTimer.singleShot(0, self.open_picker)

    # --- layout -------------------------------------------------------------------------------------------

    def _build(self) -> None:
        toolbar = QToolBar("Main")
        toolbar.setMovable(False)
        self.addToolBar(toolbar)
        self.models_action = QAction("Models…", self, triggered=self.open_picker)
        self.speculative_action = QAction("Speculative", self, checkable=True, checked=self.params.mode == "speculative")
        self.speculative_action.setToolTip("On: speculative decoding. Off: standard decoding (the target alone).")
        self.speculative_action.toggled.connect(self._mode_toggled)
        self.compare_action = QAction("Compare", self, triggered=self.compare)
        self.compare_action.setToolTip("Run the last prompt both ways and compare the speeds")
        self.markdown_action = QAction("Markdown", self, checkable=True, checked=self.settings.show_markdown())
        self.markdown_action.setToolTip("Show finished answers as Markdown (off: keep the coloured tokens)")
        self.markdown_action.toggled.connect(self._markdown_toggled)
        self.settings_action = QAction("Settings…", self, triggered=self.open_settings)
        for action in (self.models_action, self.speculative_action, self.compare_action, self.markdown_action, self.settings_action):
            toolbar.addAction(action)
        self.pair_label = QLabel("No models loaded")
        self.pair_label.setObjectName("pairLabel")
        spacer = QWidget()
        spacer.setSizePolicy(spacer.sizePolicy().horizontalPolicy().Expanding, spacer.sizePolicy().verticalPolicy().Preferred)
        toolbar.addWidget(spacer)
        toolbar.addWidget(self.pair_label)

        self.conversations = ConversationList(self.store)
        self.conversations.opened.connect(self.open_conversation)
        self.conversations.new_requested.connect(self.new_conversation)
        self.conversations.rename_requested.connect(self.rename_conversation)
        self.conversations.delete_requested.connect(self.delete_conversation)
        self.conversations.export_requested.connect(self.export_conversation)

        self.chat = ChatView()
        self.error_banner = QLabel()
        self.error_banner.setObjectName("errorBanner")
        self.error_banner.setWordWrap(True)
        self.error_banner.setStyleSheet("background: #fde2e1; color: #7a0b06; padding: 8px; border-radius: 4px;")
        self.error_banner.setVisible(False)
        self.input = ChatInput()
        self.input.submitted.connect(self.send)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(self._send_or_stop)
        column = QWidget()
        column_layout = QVBoxLayout(column)
        column_layout.setContentsMargins(0, 0, 0, 6)
        column_layout.addWidget(self.chat)
        column_layout.addWidget(self.error_banner)
        row = QHBoxLayout()
        row.addWidget(self.input)
        row.addWidget(self.send_button)
        column_layout.addLayout(row)

        self.stats = StatsPanel()
        splitter = QSplitter()
        splitter.addWidget(self.conversations)
        splitter.addWidget(column)
        splitter.addWidget(self.stats)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([200, 760, 300])
        self.setCentralWidget(splitter)
        self.statusBar().showMessage("Choose models to start (Models…)")

    # --- models ------------------------------------------------------------------------------------------

    def open_picker(self) -> None:
        self.picker.refresh()
        self.picker.check_hub()
        self.picker.show()
        self.picker.raise_()

    def load_pair(self, target: str, draft: str) -> None:
        """Load a pair on the engine worker, cancelling a running answer first."""
        self.stop()
        self.pair = None
        self.pair_label.setText("Loading…")
        self.statusBar().showMessage(f"Loading {target}" + (f" with draft {draft}" if draft else "") + "…")
        self._update_controls()
        self.requests.load.emit(target, draft)

    def _on_loaded(self, info: PairInfo) -> None:
        if self._shut_down:
            return
        self.pair = info
        self.settings.save_pair(info.target, info.draft)
        label = info.target_name + (f" ← draft {info.draft_name}" if info.draft_name else " (prompt lookup)")
        self.pair_label.setText(label)
        self.statusBar().showMessage(
            f"Loaded {label}. " + ("Warnings: " + "; ".join(info.warnings) if info.warnings else ""), 10000
        )
        self._update_controls()
        self.pair_loaded.emit(info)

    def _on_load_progress(self, stage: str, done: int, total: int) -> None:
        self.statusBar().showMessage(f"{stage}: {done}/{total}")

    def _on_load_failed(self, message: str) -> None:
        self.pair_label.setText("No models loaded")
        self.show_error(message)
        self._update_controls()

    # --- conversations -------------------------------------------------------------------------------------

    def new_conversation(self) -> None:
        self.stop()
        self.conversation_id = None
        self.chat.clear()
        self.conversations.refresh()

    def open_conversation(self, conversation_id: int) -> None:
        self.stop()
        self.conversation_id = conversation_id
        self.chat.clear()
        markdown = self.markdown_action.isChecked()
        for stored in self.store.messages(conversation_id):
            widget = self.chat.add_message(stored.role)
            widget.message_id = stored.id
            if stored.role == "assistant":
                widget.body.runs = [TokenRun(*run) for run in stored.runs]
                summary = stored.summary or ("(interrupted)" if stored.finish in ("", "cancelled") else "")
                widget.finish(stored.content, summary, markdown)
                widget.regenerate_requested.connect(self.regenerate)
            else:
                widget.set_text(stored.content)
        self.conversations.refresh(conversation_id)

    def rename_conversation(self, conversation_id: int) -> None:
        title, ok = QInputDialog.getText(self, "Rename conversation", "Title:", text=self.store.title(conversation_id))
        if ok:
            self.store.rename(conversation_id, title)
            self.conversations.refresh(self.conversation_id)

    def delete_conversation(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.new_conversation()
        self.store.delete(conversation_id)
        self.conversations.refresh(self.conversation_id)

    def export_conversation(self, conversation_id: int, path: str | None = None) -> None:
        if path is None:
            default = str(Path.home() / f"{self.store.title(conversation_id)}.md")
            path, _ = QFileDialog.getSaveFileName(self, "Export as Markdown", default, "Markdown (*.md)")
        if path:
            Path(path).write_text(self.store.export_markdown(conversation_id), encoding="utf-8")
            self.statusBar().showMessage(f"Exported to {path}", 5000)

    def _history(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.text} for m in self.chat.messages if m.text or m.role == "user"]

    # --- generating --------------------------------------------------------------------------------------

    def current_params(self) -> GenerationParams:
        mode = "speculative" if self.speculative_action.isChecked() else "standard"
        params = self.params.replace(mode=mode)
        if mode == "speculative" and self.pair is not None and not self.pair.draft and params.drafter != "lookup":
            params = params.replace(drafter="lookup")  # no draft model loaded: prompt lookup is what can draft
        return params

    def _request(self, messages: list[dict[str, str]], params: GenerationParams) -> GenerationRequest:
        self._next_request += 1
        return GenerationRequest(self._next_request, messages, params, self.system_prompt)

    def _send_or_stop(self) -> None:
        if self.active_request is not None:
            self.stop()
        else:
            self.send()

    def send(self) -> None:
        """Send the typed message (Enter or the Send button)."""
        text = self.input.toPlainText().strip()
        if not text or self.active_request is not None:
            return
        if self.pair is None:
            self.show_error("No models are loaded yet: choose a pair with Models… (or wait for the loading to finish).")
            return
        self.hide_error()
        self.input.clear()
        if self.conversation_id is None:
            self.conversation_id = self.store.create(text[:60])
        user = self.chat.add_message("user", text)
        user.message_id = self.store.add_message(self.conversation_id, "user", text)
        self.conversations.refresh(self.conversation_id)
        self._start_answer()

    def _start_answer(self) -> None:
        params = self.current_params()
        request = self._request(self._history(), params)
        self.answer = self.chat.add_message("assistant")
        self.answer.regenerate_requested.connect(self.regenerate)
        self.answer_message_id = self.store.add_message(self.conversation_id, "assistant", "")
        self.answer.message_id = self.answer_message_id
        self.active_request = request.request_id
        self.stats.reset(params.mode)
        self._last_save = time.monotonic()
        self._update_controls()
        self.requests.generate.emit(request)

    def regenerate(self) -> None:
        """Generate the last answer again."""
        if self.active_request is not None or not self.chat.messages or self.chat.messages[-1].role != "assistant":
            return
        last = self.chat.messages[-1]
        self.store.delete_message(getattr(last, "message_id"))
        self.chat.remove_last()
        self._start_answer()

    def stop(self) -> None:
        """Stop the running answer within one round (what was generated is kept)."""
        if self.active_request is not None:
            self.engine.cancel(self.active_request)
            self.send_button.setText("Stopping…")

    def _route(self, request_id: int) -> str | None:
        """Who an engine event is for: "compare", "chat", or None (a stale request, or the window closed)."""
        if self._shut_down:
            return None
        if self.compare_dialog is not None and self.compare_dialog.side_of(request_id):
            return "compare"
        if request_id == self.active_request and self.answer is not None:
            return "chat"
        return None

    def _on_events(self, request_id: int, events: list[object]) -> None:
        route = self._route(request_id)
        if route:
            self.events_received.emit(request_id, events)
        if route == "compare":
            self.compare_dialog.add_events(request_id, events)
        if route != "chat":
            return
        tokens = [e for e in events if isinstance(e, TokenEvent)]
        if tokens:
            self.answer.body.append_tokens(tokens)
            self.answer.text += "".join(t.text for t in tokens)
        self.stats.add_events(events)
        if time.monotonic() - self._last_save >= SAVE_INTERVAL_S:
            self._save_answer(finish="")

    def _save_answer(self, finish: str, summary: str = "") -> None:
        if self.answer is None or self.answer_message_id is None:
            return
        runs = [[r.text, r.origin, r.round] for r in self.answer.body.runs]
        self.store.update_message(self.answer_message_id, self.answer.text, runs, summary, finish)
        self._last_save = time.monotonic()

    def _on_finished(self, request_id: int, result: GenerationResult) -> None:
        route = self._route(request_id)
        if route == "compare":
            self.compare_dialog.finish(request_id, result)
        if route != "chat":
            return
        summary = result.summary() + (" (stopped)" if result.finish_reason == "cancelled" else "")
        self.answer.finish(result.text, summary, self.markdown_action.isChecked())
        self._save_answer(result.finish_reason, summary)
        self.stats.finish(result)
        self._idle()
        self.answer_finished.emit(result)

    def _on_error(self, request_id: int, message: str) -> None:
        route = self._route(request_id)
        if route == "compare":
            self.compare_dialog.fail(request_id, message)
        if route != "chat":
            return
        if self.answer.text:
            self.answer.finish(self.answer.text, "(interrupted by an error)", self.markdown_action.isChecked())
            self._save_answer("error", "(interrupted by an error)")
        else:
            self.store.delete_message(self.answer_message_id)
            self.chat.remove_last()
        self.show_error(message)
        self._idle()
        self.answer_failed.emit(message)

    def _idle(self) -> None:
        self.active_request = None
        self.answer = None
        self.answer_message_id = None
        self._update_controls()

    def compare(self) -> None:
        """Run the last prompt (or the typed one) both ways and show the speeds side by side."""
        if self.pair is None or self.active_request is not None:
            self.show_error("Compare needs loaded models and no answer in progress.")
            return
        history = self._history()
        typed = self.input.toPlainText().strip()
        if typed:
            history.append({"role": "user", "content": typed})
        while history and history[-1]["role"] != "user":
            history.pop()
        if not history:
            self.show_error("Type a prompt (or send one) to compare the two ways of decoding it.")
            return
        params = self.current_params()
        standard = self._request(history, params.replace(mode="standard"))
        speculative = self._request(history, params.replace(mode="speculative"))
        self.compare_dialog = CompareDialog(history[-1]["content"], {"standard": standard.request_id, "speculative": speculative.request_id}, self)
        self.compare_dialog.show()
        self.requests.generate.emit(standard)
        self.requests.generate.emit(speculative)

    # --- controls and settings ----------------------------------------------------------------------------

    def _update_controls(self) -> None:
        busy = self.active_request is not None
        self.send_button.setText("Stop" if busy else "Send")
        self.send_button.setEnabled(busy or self.pair is not None)
        self.compare_action.setEnabled(self.pair is not None and not busy)

    def _mode_toggled(self, on: bool) -> None:
        self.params = self.params.replace(mode="speculative" if on else "standard")
        self.settings.save_params(self.params)

    def _markdown_toggled(self, on: bool) -> None:
        self.settings.save_show_markdown(on)
        for message in self.chat.messages:
            if message.role == "assistant" and message is not self.answer:
                message.render(on)

    def open_settings(self) -> None:
        dialog = SettingsDialog(self.current_params(), self.system_prompt, self)
        if dialog.exec():
            self.apply_settings(dialog.params(), dialog.system_prompt.toPlainText())

    def apply_settings(self, params: GenerationParams, system_prompt: str) -> None:
        """Use new settings from the next answer on, and remember them."""
        self.params = params
        self.system_prompt = system_prompt
        self.speculative_action.setChecked(params.mode == "speculative")
        self.settings.save_params(params)
        self.settings.save_system_prompt(system_prompt)

    def show_error(self, message: str) -> None:
        self.error_banner.setText(message)
        self.error_banner.setVisible(True)

    def hide_error(self) -> None:
        self.error_banner.setVisible(False)

    # --- shutting down -------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Cancel what runs, quit and wait for both worker threads (no "QThread destroyed while running"),
        deliver the events they sent on the way out (a stopped answer is saved whole), then close the store."""
        if self._shutting_down:
            return
        self._shutting_down = True
        self.engine.cancel(self._next_request)
        self.downloads.cancel()
        stop_thread(self.engine_thread)
        stop_thread(self.download_thread)
        QCoreApplication.sendPostedEvents(self)
        QCoreApplication.sendPostedEvents(self.picker)
        if self.answer is not None:
            self._save_answer("cancelled", "(interrupted)")
        self.store.close()
        self._shut_down = True

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        self.shutdown()
        super().closeEvent(event)
