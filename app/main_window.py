"""The main window: conversations, the chat column, the live speculation panel, and the controls.

A view over the `ChatSession`: it forwards the user's actions to the session and shows what the session
reports (the streaming answer as coloured tokens, stats, errors). It never touches MLX, and keeps no state
the session has: which answer runs, and for which conversation, is the session's to know. Changes to a
conversation's structure (an edit, a deleted message, another branch) redraw it from the store.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QLabel, QMainWindow, QMessageBox, QSplitter

from engine.events import GenerationResult
from engine.params import GenerationParams
from engine.saved_rounds import last_answer

from .chat_column import ChatColumn
from .compare_dialog import CompareDialog
from .conversation_list import ConversationList
from .drafter_choice import DrafterChoice
from .load_status import LoadStatus
from .local_server import LocalServer
from .menu_bar import MenuBar
from .message_widget import MessageWidget
from .pair_picker import PairPickerDialog
from .server_dialog import ServerDialog
from .session import ChatSession
from .settings_dialog import SettingsDialog
from .stats_panel import StatsPanel
from .streaming_answer import StreamingAnswer
from .think_switch import ThinkSwitch
from .toolbar import MainToolbar
from .trace_export import save_trace
from .window_layout import restore_window_layout, save_window_layout


class MainWindow(QMainWindow):
    """SpecChat's window.

    Attributes:
        session: the state and actions the window shows.
        conversation_id: the conversation shown (None: a new chat, not saved until its first message).
        answer_view: the message widget the streaming answer goes into, when its conversation is shown.
        compare_dialog: the last Compare.
        ask_before_quitting: warn before closing while an answer is generated.
    """

    def __init__(self, open_picker_if_needed: bool = True) -> None:
        super().__init__()
        self.setWindowTitle("SpecChat")
        self.session = ChatSession(self)
        self.conversation_id: int | None = None
        self.answer_view: MessageWidget | None = None
        self.compare_dialog: CompareDialog | None = None
        self.ask_before_quitting = True
        self._build()
        self._connect_session()
        self._update_controls()  # Send and Compare wait for a pair from the start, not from the session's first signal
        self.picker = PairPickerDialog(self.session.engine, self.session.downloads, self)
        self.picker.pair_chosen.connect(self.session.load_pair)
        self.server_dialog = ServerDialog(LocalServer(self.session, self), self)
        self.server_dialog.server.state_changed.connect(lambda address: self.serving.setText(address and f"Serving {address}"))
        self.open_conversation(last) if (last := self.conversations.last_shown()) is not None else self.conversations.refresh()
        if self.session.store.degraded:
            self.show_error(self.session.store.degraded)
        saved = self.session.settings.pair()
        if saved:
            self.session.load_pair(*saved)
        elif open_picker_if_needed:
            QTimer.singleShot(0, self.open_picker)

    # --- layout -------------------------------------------------------------------------------------------

    def _build(self) -> None:
        self._build_toolbar()
        self.conversations = ConversationList(self.session.store, self.session.settings)
        self.conversations.opened.connect(self.open_conversation)
        self.conversations.new_requested.connect(self.new_conversation)
        self.conversations.delete_confirmed.connect(self.delete_conversation)
        self.conversations.exported.connect(lambda path: self.statusBar().showMessage(f"Exported to {path}", 5000))
        self.conversations.changed.connect(lambda _id: self._update_pair_label())
        column = ChatColumn(self.session)
        self.chat, self.error_banner, self.input, self.send_button = column.chat, column.error_banner, column.input, column.send_button
        self.undo_banner, self.show_error, self.hide_error = column.undo_banner, column.show_error, column.hide_error
        self.attachments, self.tool_cards = column.attachments, column.tool_cards
        self.undo_banner.restored.connect(self.open_conversation)
        for failed in (self.undo_banner.failed, self.conversations.export_failed):
            failed.connect(self.show_error)
        self.think_switch = ThinkSwitch(self.session, lambda: self.conversation_id)
        column.input_row.insertWidget(1, self.think_switch)
        self.input.submitted.connect(self.send)
        self.send_button.clicked.connect(self._send_or_stop)
        self.stats = StatsPanel(show_rejected=self.session.settings.show_rejected())
        self.stats.show_rejected_changed.connect(self._show_rejected_toggled)
        self.chat.set_show_rejected(self.session.settings.show_rejected())
        self.columns = QSplitter()
        for widget in (self.conversations, column, self.stats):
            self.columns.addWidget(widget)
        self.columns.setStretchFactor(1, 1)
        restore_window_layout(self, self.columns, self.session.settings)
        self.setCentralWidget(self.columns)
        self.setMenuBar(MenuBar(self.toolbar, self.columns, column.text_size, new_chat=self.new_conversation, stop=self.stop,
                                quit=self.close))
        self.statusBar().showMessage("Choose models to start (Models…)")
        self.serving = QLabel()
        self.statusBar().addPermanentWidget(self.serving)
        self.load_status = LoadStatus(self.session, self.statusBar())

    def _build_toolbar(self) -> None:
        self.toolbar = MainToolbar(self.session.params.mode == "speculative", self.session.settings.show_markdown(),
                                   DrafterChoice(self.session), self)
        self.addToolBar(self.toolbar)
        t = self.toolbar
        for signal, slot in ((t.models_action.triggered, self.open_picker), (t.speculative_action.toggled, self._mode_toggled),
                             (t.compare_action.triggered, self.compare), (t.markdown_action.toggled, self._markdown_toggled),
                             (t.settings_action.triggered, self.open_settings), (t.drafter.chosen, self._update_controls),
                             (t.server_action.triggered, lambda: self.server_dialog.present())):
            signal.connect(slot)

    def _connect_session(self) -> None:
        s = self.session
        for signal, slot in (
            (s.pair_loading, self._update_controls), (s.pair_loaded, self.hide_error), (s.pair_loaded, self._update_controls),
            (s.pair_failed, self._on_load_failed), (s.load_cancelled, self._update_controls),
            (s.answer_started, self._on_answer_started), (s.answer_running, self._on_answer_running),
            (s.answer_events, self._on_answer_events), (s.answer_finished, self._on_answer_finished),
            (s.answer_failed, self._on_answer_failed), (s.prompt_rejected, self._on_prompt_rejected),
            (s.busy_changed, self._update_controls), (s.kept_error, self.show_error), (s.storage_failed, self.show_error),
        ):
            signal.connect(slot)

    # --- models ------------------------------------------------------------------------------------------

    def open_picker(self) -> None:
        pair = self.session.pair
        self.picker.refresh((pair.target, pair.draft or "") if pair else None)
        self.picker.check_hub()
        self.picker.show()
        self.picker.raise_()

    def _on_load_failed(self, message: str) -> None:
        self.show_error(message + (" The models loaded before are still in use." if self.session.pair else ""))
        self._update_controls()

    def _update_pair_label(self) -> None:
        self.toolbar.pair_label.setText(self.session.describe_pair())

    # --- conversations -------------------------------------------------------------------------------------

    def new_conversation(self) -> None:
        self._leave_answer(None)
        self.conversation_id, self.answer_view = None, None
        self.chat.clear()
        self.stats.reset(self.session.params.mode)  # not the numbers of the chat shown before
        self.think_switch.refresh()
        self.conversations.refresh()
        self.input.setFocus()  # a new chat is typed into: Ctrl+N and typing lost the keys to the chat list

    def open_conversation(self, conversation_id: int) -> None:
        """Show a conversation (the thread its selected branches make), stopping an answer in another one."""
        self._leave_answer(conversation_id)
        switching, self.conversation_id, self.answer_view = conversation_id != self.conversation_id, conversation_id, None
        self.chat.clear()
        markdown = self.toolbar.markdown_action.isChecked()
        answer = self.session.answer
        for stored in (thread := self.session.store.messages(conversation_id)):
            widget = self.chat.add_message(stored.role)
            self._wire(widget, stored)
            if answer is not None and stored.id == answer.message_id:
                # Still streaming: saved without a finish, which in the store reads as "(interrupted)".
                self.answer_view = widget
                widget.show_streaming(answer)
            else:
                widget.show_stored(stored, markdown)
                self.tool_cards.show_saved(widget, stored)
        last = last_answer(thread)  # the panel shows the last answer shown (another chat's, another branch's, deleted)
        if self.answer_view is None and (switching or self.stats.showing != (last.id if last else None)):
            self.stats.show_saved(last, self.session.params.mode)
        self.chat.set_busy(self.session.busy)
        self.think_switch.refresh()
        self.conversations.refresh(conversation_id)

    def _leave_answer(self, going_to: int | None) -> None:
        """Stop an answer in a chat the user leaves, and say so: it stopped silently."""
        if (answer := self.session.answer) is not None and answer.conversation_id != going_to:
            self.session.stop()
            self.statusBar().showMessage("Stopped the answer in the chat you left: what it wrote so far is kept there.", 10000)

    def _wire(self, widget, stored) -> None:
        """Connect a message's actions to the saved message it shows."""
        widget.message_id = stored.id
        widget.set_branch(stored.branch, stored.branches)
        widget.edit_submitted.connect(lambda text, m=stored.id: self.edit_message(m, text))
        widget.delete_requested.connect(lambda m=stored.id: self.delete_message(m))
        widget.branch_requested.connect(lambda step, m=stored.id: self.select_branch(m, step))
        if stored.role == "assistant":
            widget.regenerate_requested.connect(self.regenerate)
            widget.continue_requested.connect(lambda m=stored.id: self.session.continue_answer(m))
            widget.trace_requested.connect(lambda m=stored.id: self.export_trace(m))

    def delete_conversation(self, conversation_id: int) -> None:
        if (answer := self.session.answer) is not None and answer.conversation_id == conversation_id:
            self.session.stop()
        if conversation_id == self.conversation_id:
            self.new_conversation()
        self.session.store.delete(conversation_id)
        self.conversations.refresh(self.conversation_id)

    def edit_message(self, message_id: int, text: str) -> None:
        if self.session.ready and (conversation_id := self.session.edit(message_id, text)) is not None:
            self.open_conversation(conversation_id)

    def delete_message(self, message_id: int) -> None:
        """Delete a message and what followed it at once; the banner under the chat offers to undo it."""
        if self.session.busy or self.conversation_id is None:
            return
        shown = [m.id for m in self.session.store.messages(self.conversation_id)]
        following = len(shown) - shown.index(message_id) - 1 if message_id in shown else 0
        self.undo_banner.delete(self.conversation_id, message_id, following)
        self.open_conversation(self.conversation_id)

    def select_branch(self, message_id: int, step: int) -> None:
        self.session.select_branch(message_id, step)
        if self.conversation_id is not None:  # a message's arrows: of the chat shown
            self.open_conversation(self.conversation_id)

    # --- generating --------------------------------------------------------------------------------------

    def _send_or_stop(self) -> None:
        """The Send button's one job at a time: Stop while an answer runs."""
        self.stop() if self.session.busy else self.send()

    def send(self) -> None:
        """Send the typed message (Enter or the Send button)."""
        text = self.input.toPlainText().strip()
        if not (text or self.attachments.images()) or self.session.busy:  # an image alone is a question
            return
        if self.session.pair is None or self.session.loading:
            self.show_error("No models are loaded yet: choose a pair with Models… (or wait for the loading to finish).")
            return
        if self.attachments.refuses_unseen_images():  # said over the box; the message and its images stay there
            return
        self.hide_error()
        self.input.clear()
        if self.conversation_id is None:
            self.conversation_id = self.session.new_conversation(text or ", ".join(i.name for i in self.attachments.images()))
        self.session.send(self.conversation_id, text, self.attachments.take(self.chat.add_message("user", text), text))
        self.conversations.refresh(self.conversation_id)

    def regenerate(self) -> None:
        """Answer the last question again (the old answer stays as a branch)."""
        if self.conversation_id is not None and self.session.ready and self.session.regenerate(self.conversation_id):
            self.open_conversation(self.conversation_id)

    def stop(self) -> None:
        """Stop the running answer within one round (what was generated is kept)."""
        self.session.stop()

    def _on_answer_started(self, answer: StreamingAnswer) -> None:
        self.undo_banner.withdraw()  # a new answer changes the chat: no Undo past it
        is_shown = answer.conversation_id == self.conversation_id
        self.answer_view = self.chat.answer_view(answer) if is_shown else None
        if self.answer_view is not None:
            self.answer_view.set_waiting(answer.waiting)
        self._reset_stats(answer)

    def _reset_stats(self, answer: StreamingAnswer) -> None:
        self.stats.reset(answer.mode, self.session.pair.draft_weight_share if self.session.pair else None, answer.lenience)

    def _on_answer_running(self, answer: StreamingAnswer) -> None:
        """The worker took the answer up: the panel's clock starts now, as the engine's does, so the first-token
        figure it shows while streaming is the one the stats line gives (neither counts a wait for the server)."""
        self._reset_stats(answer)
        if self.answer_view is not None:
            self.answer_view.set_waiting(False)

    def _on_answer_events(self, answer: StreamingAnswer, events: list[object]) -> None:
        if self.answer_view is not None:  # the panel shows the chat shown: not the rounds of one left mid-answer
            self.stats.add_events(events)
            self.answer_view.append_events(events)
            self.answer_view.text = answer.text

    def _on_answer_finished(self, answer: StreamingAnswer, result: GenerationResult, summary: str) -> None:
        """The streamed answer is finished in place and given its actions (no redraw of the conversation)."""
        view, self.answer_view = self.answer_view, None
        if view is None or answer.conversation_id != self.conversation_id:
            return  # its numbers are not the chat shown's
        self.stats.finish(result, answer.message_id)
        ttft = self.stats.values["ttft"]
        ttft.setText(ttft.text() + answer.wait_note(short=True))
        view.finish_answer(answer, result, summary, self.toolbar.markdown_action.isChecked())
        view.message_id = view.message_id if answer.earlier else None  # a new answer: wired below with the others saved since
        for widget, stored in zip(self.chat.messages, self.session.store.messages(answer.conversation_id)):
            if widget.message_id is None:
                self._wire(widget, stored)

    def _on_answer_failed(self, answer: StreamingAnswer, message: str) -> None:
        self.answer_view = None
        self.show_error(message)
        if answer.conversation_id == self.conversation_id:
            self.open_conversation(answer.conversation_id)

    def _on_prompt_rejected(self, conversation_id: int, text: str, message: str) -> None:
        """A question too long for the model is back in the input box, to shorten; the chat goes on."""
        if not self.input.toPlainText().strip():
            self.input.setPlainText(text)
        if conversation_id == self.conversation_id:  # it went, if the question was its only message
            self.open_conversation(conversation_id) if self.session.store.exists(conversation_id) else self.new_conversation()
        self.conversations.refresh(self.conversation_id)
        self.show_error(message + " The message is back in the box below to shorten.")

    def compare(self) -> None:
        """Run the last prompt (or the typed one) two ways (standard against the chat's drafter, until the user picks
        others) and show the speeds side by side."""
        if not self.session.ready:
            self.show_error("Compare needs loaded models and no answer in progress.")
            return
        history = self.session.compare_messages(self.conversation_id, self.attachments.with_files(self.input.toPlainText().strip()))
        if not history:
            self.show_error("Type a prompt (or send one) to compare the two ways of decoding it.")
            return
        picked = self.compare_dialog.sides if self.compare_dialog is not None else None  # the last Compare's pick
        self.compare_dialog = CompareDialog(history, self.conversation_id, self.session, self, picked)
        self.compare_dialog.show()

    # --- controls and settings ----------------------------------------------------------------------------

    def _update_controls(self, *_: object) -> None:
        self._update_pair_label()
        answer = self.session.answer
        busy, stopping = answer is not None, answer is not None and answer.stopping
        self.send_button.setText("Stopping…" if stopping else ("Stop" if busy else "Send"))
        self.send_button.setEnabled((busy and not stopping) or (self.session.pair is not None and not self.session.loading))
        self.toolbar.compare_action.setEnabled(self.session.ready)
        self.chat.set_busy(busy)

    def _mode_toggled(self, on: bool) -> None:
        self.session.set_mode("speculative" if on else "standard")
        self._update_pair_label()
        self.toolbar.drafter.refresh()  # greyed while the target decodes alone

    def _markdown_toggled(self, on: bool) -> None:
        self.session.settings.save_show_markdown(on)
        for message in self.chat.messages:
            if message.role == "assistant" and message is not self.answer_view:
                message.show_text(on)

    def _show_rejected_toggled(self, on: bool) -> None:
        self.session.settings.save_show_rejected(on)
        self.chat.set_show_rejected(on)

    def export_trace(self, message_id: int, path: str | None = None) -> None:
        """Write an answer's speculation trace as JSON Lines (asks where, unless given a path)."""
        written, error = save_trace(self, self.session.store, message_id, path)
        if error:
            self.show_error(error)
        elif written:
            self.statusBar().showMessage(f"Trace exported to {written}", 5000)

    def open_settings(self) -> None:
        """Edit the settings (the drafter is the toolbar's choice: SSD and the history switch follow it)."""
        info = self.session.pair
        dialog = SettingsDialog(self.session.params, self.session.system_prompt, self,
                                can_switch_thinking=bool(info and info.can_switch_thinking), hosts=self.session.across.hosts,
                                hostfile=self.session.across.hostfile, mcp=self.session.tools.servers)
        if dialog.exec():
            self.apply_settings(dialog.params(), dialog.system_prompt.toPlainText())
            self.session.across.choose(dialog.across_macs.hosts(), self.session.pair)

    def apply_settings(self, params: GenerationParams, system_prompt: str) -> None:
        """Use new settings from the next answer on, and remember them."""
        self.session.apply_settings(params, system_prompt)
        self.toolbar.speculative_action.setChecked(params.mode == "speculative")
        self.think_switch.refresh()
        self._update_pair_label()

    # --- shutting down -------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop serving, stop the session's workers (saving a running answer), deliver what they sent to the dialogs;
        remember the window's layout."""
        save_window_layout(self, self.columns, self.session.settings)
        self.server_dialog.server.stop()
        self.session.shutdown()
        QCoreApplication.sendPostedEvents(self.picker)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if self.ask_before_quitting and self.session.busy and not self._confirm_quit():
            event.ignore()
            return
        self.shutdown()
        super().closeEvent(event)

    def _confirm_quit(self) -> bool:
        yes, no = QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No
        answer = QMessageBox.question(self, "Quit while answering?",
                                      "An answer is still being generated. Quit anyway? What was generated so far is kept.", yes | no, no)
        return answer == yes
