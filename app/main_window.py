"""The main window: conversations, the chat column, the live speculation panel, and the controls.

A view over the `ChatSession`: it forwards the user's actions to the session and shows what the session
reports (the streaming answer as coloured tokens, stats, errors). It never touches MLX, and keeps no state
the session has: which answer runs, and for which conversation, is the session's to know.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeyEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from engine.events import GenerationResult, TokenEvent

from .chat_view import ChatView, MessageWidget, TokenRun
from .compare_dialog import CompareDialog
from .conversation_list import ConversationList
from .pair_picker import PairPickerDialog
from .session import ChatSession, StreamingAnswer
from .settings_dialog import SettingsDialog
from .stats_panel import StatsPanel
from .worker import PairInfo


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


class MainWindow(QMainWindow):
    """SpecChat's window.

    Attributes:
        session: the state and actions the window shows.
        conversation_id: the conversation shown (None: a new chat, not saved until its first message).
        answer_view: the message widget the streaming answer goes into, when its conversation is shown.
        compare_dialog: the last Compare.
    """

    def __init__(self, open_picker_if_needed: bool = True) -> None:
        super().__init__()
        self.setWindowTitle("SpecChat")
        self.resize(1280, 800)
        self.session = ChatSession(self)
        self.conversation_id: int | None = None
        self.answer_view: MessageWidget | None = None
        self.compare_dialog: CompareDialog | None = None
        self._build()
        self._connect_session()
        self.picker = PairPickerDialog(self.session.engine, self.session.downloads, self)
        self.picker.pair_chosen.connect(self.session.load_pair)
        self.conversations.refresh()
        saved = self.session.settings.pair()
        if saved:
            self.session.load_pair(*saved)
        elif open_picker_if_needed:
            QTimer.singleShot(0, self.open_picker)

    # --- layout -------------------------------------------------------------------------------------------

    def _build(self) -> None:
        toolbar = QToolBar("Main")
        toolbar.setMovable(False)
        self.addToolBar(toolbar)
        self.models_action = QAction("Models…", self, triggered=self.open_picker)
        self.speculative_action = QAction("Speculative", self, checkable=True, checked=self.session.mode == "speculative")
        self.speculative_action.setToolTip("On: speculative decoding. Off: standard decoding (the target alone).")
        self.speculative_action.toggled.connect(self._mode_toggled)
        self.compare_action = QAction("Compare", self, triggered=self.compare)
        self.compare_action.setToolTip("Run the last prompt both ways and compare the speeds")
        self.markdown_action = QAction("Markdown", self, checkable=True, checked=self.session.settings.show_markdown())
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

        self.conversations = ConversationList(self.session.store)
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

    def _connect_session(self) -> None:
        s = self.session
        s.pair_loading.connect(self._on_loading)
        s.pair_loaded.connect(self._on_loaded)
        s.pair_failed.connect(self._on_load_failed)
        s.load_progress.connect(self._on_load_progress)
        s.answer_started.connect(self._on_answer_started)
        s.answer_events.connect(self._on_answer_events)
        s.answer_finished.connect(self._on_answer_finished)
        s.answer_failed.connect(self._on_answer_failed)
        s.compare_events.connect(self._on_compare_events)
        s.compare_finished.connect(self._on_compare_finished)
        s.compare_failed.connect(self._on_compare_failed)
        s.busy_changed.connect(self._update_controls)

    # --- models ------------------------------------------------------------------------------------------

    def open_picker(self) -> None:
        self.picker.refresh()
        self.picker.check_hub()
        self.picker.show()
        self.picker.raise_()

    def _on_loading(self, message: str) -> None:
        self.pair_label.setText("Loading…")
        self.statusBar().showMessage(message)
        self._update_controls()

    def _on_loaded(self, info: PairInfo) -> None:
        label = info.target_name + (f" ← draft {info.draft_name}" if info.draft_name else " (prompt lookup)")
        self.pair_label.setText(label)
        self.statusBar().showMessage(
            f"Loaded {label}. " + ("Warnings: " + "; ".join(info.warnings) if info.warnings else ""), 10000
        )
        self._update_controls()

    def _on_load_progress(self, stage: str, done: int, total: int) -> None:
        self.statusBar().showMessage(f"{stage}: {done}/{total}")

    def _on_load_failed(self, message: str) -> None:
        self.pair_label.setText("No models loaded")
        self.show_error(message)
        self._update_controls()

    # --- conversations -------------------------------------------------------------------------------------

    def new_conversation(self) -> None:
        self.session.stop()
        self.conversation_id = None
        self.answer_view = None
        self.chat.clear()
        self.conversations.refresh()

    def open_conversation(self, conversation_id: int) -> None:
        self.session.stop()
        self.conversation_id = conversation_id
        self.answer_view = None
        self.chat.clear()
        markdown = self.markdown_action.isChecked()
        for stored in self.session.store.messages(conversation_id):
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
        store = self.session.store
        title, ok = QInputDialog.getText(self, "Rename conversation", "Title:", text=store.title(conversation_id))
        if ok:
            store.rename(conversation_id, title)
            self.conversations.refresh(self.conversation_id)

    def delete_conversation(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.new_conversation()
        self.session.store.delete(conversation_id)
        self.conversations.refresh(self.conversation_id)

    def export_conversation(self, conversation_id: int, path: str | None = None) -> None:
        store = self.session.store
        if path is None:
            default = str(Path.home() / f"{store.title(conversation_id)}.md")
            path, _ = QFileDialog.getSaveFileName(self, "Export as Markdown", default, "Markdown (*.md)")
        if path:
            Path(path).write_text(store.export_markdown(conversation_id), encoding="utf-8")
            self.statusBar().showMessage(f"Exported to {path}", 5000)

    # --- generating --------------------------------------------------------------------------------------

    def _send_or_stop(self) -> None:
        if self.session.busy:
            self.stop()
        else:
            self.send()

    def send(self) -> None:
        """Send the typed message (Enter or the Send button)."""
        text = self.input.toPlainText().strip()
        if not text or self.session.busy:
            return
        if self.session.pair is None:
            self.show_error("No models are loaded yet: choose a pair with Models… (or wait for the loading to finish).")
            return
        self.hide_error()
        self.input.clear()
        self.chat.add_message("user", text)
        if self.conversation_id is None:
            self.conversation_id = self.session.new_conversation(text)
        self.session.send(self.conversation_id, text)
        self.conversations.refresh(self.conversation_id)

    def regenerate(self) -> None:
        """Generate the last answer again."""
        last = self.chat.messages[-1] if self.chat.messages else None
        if self.conversation_id is None or self.session.busy or last is None or last.role != "assistant":
            return
        self.chat.remove_message(last)
        self.session.regenerate(self.conversation_id)

    def stop(self) -> None:
        """Stop the running answer within one round (what was generated is kept)."""
        self.session.stop()
        self._update_controls()

    def _on_answer_started(self, answer: StreamingAnswer) -> None:
        self.answer_view = None
        if answer.conversation_id == self.conversation_id:
            self.answer_view = self.chat.add_message("assistant")
            self.answer_view.message_id = answer.message_id
            self.answer_view.regenerate_requested.connect(self.regenerate)
        self.stats.reset(answer.mode)

    def _on_answer_events(self, answer: StreamingAnswer, events: list[object]) -> None:
        self.stats.add_events(events)
        if self.answer_view is not None:
            self.answer_view.body.append_tokens([e for e in events if isinstance(e, TokenEvent)])
            self.answer_view.text = answer.text

    def _on_answer_finished(self, answer: StreamingAnswer, result: GenerationResult, summary: str) -> None:
        self.stats.finish(result)
        if self.answer_view is not None:
            self.answer_view.finish(result.text, summary, self.markdown_action.isChecked())
        self.answer_view = None

    def _on_answer_failed(self, answer: StreamingAnswer, message: str) -> None:
        if self.answer_view is not None:
            if answer.text:
                self.answer_view.finish(answer.text, "(interrupted by an error)", self.markdown_action.isChecked())
            else:
                self.chat.remove_message(self.answer_view)
        self.answer_view = None
        self.show_error(message)

    def compare(self) -> None:
        """Run the last prompt (or the typed one) both ways and show the speeds side by side."""
        if self.session.pair is None or self.session.busy:
            self.show_error("Compare needs loaded models and no answer in progress.")
            return
        history = self.session.history(self.conversation_id)
        typed = self.input.toPlainText().strip()
        if typed:
            history.append({"role": "user", "content": typed})
        while history and history[-1]["role"] != "user":
            history.pop()
        if not history:
            self.show_error("Type a prompt (or send one) to compare the two ways of decoding it.")
            return
        requests = self.session.compare(history)
        self.compare_dialog = CompareDialog(history[-1]["content"], requests, self)
        self.compare_dialog.show()

    def _on_compare_events(self, request_id: int, events: list[object]) -> None:
        if self.compare_dialog is not None:
            self.compare_dialog.add_events(request_id, events)

    def _on_compare_finished(self, request_id: int, result: GenerationResult) -> None:
        if self.compare_dialog is not None:
            self.compare_dialog.finish(request_id, result)

    def _on_compare_failed(self, request_id: int, message: str) -> None:
        if self.compare_dialog is not None:
            self.compare_dialog.fail(request_id, message)

    # --- controls and settings ----------------------------------------------------------------------------

    def _update_controls(self, *_: object) -> None:
        busy = self.session.busy
        stopping = busy and self.session.answer.stopping
        self.send_button.setText("Stopping…" if stopping else ("Stop" if busy else "Send"))
        self.send_button.setEnabled((busy and not stopping) or self.session.pair is not None)
        self.compare_action.setEnabled(self.session.pair is not None and not busy)

    def _mode_toggled(self, on: bool) -> None:
        self.session.set_mode("speculative" if on else "standard")

    def _markdown_toggled(self, on: bool) -> None:
        self.session.settings.save_show_markdown(on)
        for message in self.chat.messages:
            if message.role == "assistant" and message is not self.answer_view:
                message.render(on)

    def open_settings(self) -> None:
        """Edit the settings as chosen, not as the loaded pair makes them run (no draft model: lookup)."""
        dialog = SettingsDialog(self.session.params, self.session.system_prompt, self)
        if dialog.exec():
            self.apply_settings(dialog.params(), dialog.system_prompt.toPlainText())

    def apply_settings(self, params, system_prompt: str) -> None:  # noqa: ANN001 - GenerationParams
        """Use new settings from the next answer on, and remember them."""
        self.session.apply_settings(params, system_prompt)
        self.speculative_action.setChecked(params.mode == "speculative")

    def show_error(self, message: str) -> None:
        self.error_banner.setText(message)
        self.error_banner.setVisible(True)

    def hide_error(self) -> None:
        self.error_banner.setVisible(False)

    # --- shutting down -------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop the session's workers (saving a running answer) and deliver what they sent to the dialogs."""
        self.session.shutdown()
        QCoreApplication.sendPostedEvents(self.picker)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        self.shutdown()
        super().closeEvent(event)
