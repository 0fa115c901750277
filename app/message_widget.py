"""One message of the conversation with its actions (copy, edit, delete, regenerate, branches).

Answers show in a `TokenTextView` (token_view.py): coloured tokens while they stream, Markdown when finished.
A message with siblings (an edited question, a regenerated answer) shows "‹ 2/3 ›" to flip between versions.
Under an answer, a notice when one is due (reading the prompt, waiting for the Local server, cut short) and its
stats line.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Signal
from PySide6.QtGui import QFont, QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.answer_ends import can_go_on
from engine.events import PrefillEvent, TokenEvent, split_rounds

from .attachments_bar import show_chips
from .flow_layout import flow_row
from .message_box import MessageBox
from .palette import notice_colour
from .quiet_text import make_quiet
from .reasoning_fold import ReasoningFold, route
from .streaming_answer import StreamingAnswer
from .token_view import TokenTextView, saved_runs

WAITING_FOR_SERVER = "Waiting for a server request to finish…"


def cut_notice(finish: str, tokens: int) -> str:
    """What a cut answer says under its last word: where it was cut, and what lets the next answer run longer."""
    if finish == "length":
        return f"Cut at the {tokens}-token limit: Continue goes on from here (Max tokens in Settings sets the limit)."
    if finish == "context":
        return "Cut where the conversation filled the model's context: start a new chat to go on."
    return ""


def reading_line(event: PrefillEvent) -> str:
    """Prefill's progress as the user reads it, from its first chunk (a long prompt takes the models minutes)."""
    by = " (the draft model reads it too)" if event.model == "draft" else ""
    return f"Reading your message: {event.processed} of {event.total} tokens{by}"


def _tool_button(text: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setText(text)
    button.setToolTip(tip)
    button.setAutoRaise(True)
    return button


FIRST_TOKEN_MEANING = ("First token after: from the moment the models started on this answer (reading the prompt "
                       "included) to its first token. Time spent waiting for a Local server request is given apart.")


def _note(name: str, style: str) -> QLabel:
    """A small wrapped line under an answer (hidden until it has something to say)."""
    label = QLabel()
    label.setObjectName(name)
    label.setStyleSheet(style)
    label.setWordWrap(True)
    label.setVisible(False)
    return label


class MessageWidget(QFrame):
    """One message: who said it, its text, its actions, and for answers a notice when one is due (waiting for a
    Local server request, cut at the token limit) and a stats line; a thinking model's answer has its reasoning
    folded under the header.

    Signals:
        regenerate_requested(): Regenerate was clicked (the last answer only).
        continue_requested(): Continue was clicked (the last answer, when it ended short of its own end).
        edit_submitted(str): the question was edited and sent again (a new branch).
        delete_requested(): Delete was clicked.
        branch_requested(int): show the previous (-1) or next (+1) version of this message.
        trace_requested(): Trace… was clicked: export this answer's speculation, round by round.

    Attributes:
        message_id: the saved message (None until saved).
        fold: the reasoning (hidden when the answer has none).
        can_go_on: the answer ended short of its own end (`answer_ends.can_go_on`): Continue is offered while it is
            the chat's last.
    """

    regenerate_requested = Signal()
    continue_requested = Signal()
    edit_submitted = Signal(str)
    delete_requested = Signal()
    branch_requested = Signal(int)
    trace_requested = Signal()

    def __init__(self, role: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = role
        self.text = ""
        self.message_id: int | None = None
        self.can_go_on = False
        self.setObjectName("userMessage" if role == "user" else "assistantMessage")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.addLayout(self._header())
        self.fold = ReasoningFold(self)
        layout.addWidget(self.fold)
        self.body = TokenTextView(self)
        layout.addWidget(self.body)
        self._places: dict[int, int] = {}  # tokens so far per round, reasoning and markers included
        self._last_part = "answer"
        self.editor = MessageBox("Enter sends, Shift+Enter for a new line")
        self.editor.submitted.connect(self._submit_edit)
        self.editor.setVisible(False)
        self.editor.setMaximumHeight(140)
        layout.addWidget(self.editor)
        self.edit_buttons = self._edit_buttons()
        layout.addWidget(self.edit_buttons)
        self.notice = _note("answerNotice", "")
        self._colour_notice()
        layout.addWidget(self.notice)
        self.stats = make_quiet(_note("statsLine", ""), "font-size: 11px;")
        self.stats.setToolTip(FIRST_TOKEN_MEANING)
        layout.addWidget(self.stats)

    def _colour_notice(self) -> None:
        self.notice.setStyleSheet(f"color: {notice_colour(self.palette()).name()}; font-size: 11px;")

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        """The notice follows the system into light or dark mode."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "notice"):
            self._colour_notice()

    def _header(self) -> QHBoxLayout:
        header = QHBoxLayout()
        self.speaker = QLabel("You" if self.role == "user" else "Assistant")
        bold = QFont()  # bold only: its size follows the chat's text (a style sheet's font would not: text_size.py)
        bold.setBold(True)
        self.speaker.setFont(bold)
        header.addWidget(self.speaker)
        self.previous_branch = _tool_button("‹", "Previous version")
        self.branch_label = QLabel()
        self.next_branch = _tool_button("›", "Next version")
        self.previous_branch.clicked.connect(lambda: self.branch_requested.emit(-1))
        self.next_branch.clicked.connect(lambda: self.branch_requested.emit(1))
        for widget in (self.previous_branch, self.branch_label, self.next_branch):
            header.addWidget(widget)
        self.set_branch(1, 1)
        self.copy_button = _tool_button("Copy", "Copy this message")
        self.copy_button.clicked.connect(self.copy)
        self.edit_button = _tool_button("Edit", "Ask this differently: the answers after it are kept as a branch")
        self.edit_button.clicked.connect(self.start_editing)
        self.edit_button.setVisible(self.role == "user")
        self.regenerate_button = _tool_button("Regenerate", "Answer again (this answer is kept as a branch)")
        self.regenerate_button.clicked.connect(self.regenerate_requested)
        self.regenerate_button.setVisible(False)
        self.continue_button = _tool_button("Continue", "Go on from where this answer ended (its token limit, Stop, an interruption)")
        self.continue_button.clicked.connect(self.continue_requested)
        self.continue_button.setVisible(False)
        self.delete_button = _tool_button("Delete", "Delete this message and what follows it")
        self.delete_button.clicked.connect(self.delete_requested)
        self.trace_button = _tool_button("Trace…", "Export this answer's speculation, round by round (JSON Lines)")
        self.trace_button.clicked.connect(self.trace_requested)
        self.trace_button.setVisible(False)
        # In a narrow column the actions wrap onto a second row instead of widening the column.
        header.addWidget(flow_row([self.copy_button, self.trace_button, self.edit_button, self.continue_button,
                                   self.regenerate_button, self.delete_button]), 1)
        return header

    def _edit_buttons(self) -> QWidget:
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addStretch()
        cancel = QPushButton("Cancel")
        cancel.clicked.connect(self.stop_editing)
        self.send_edit = QPushButton("Send")
        self.send_edit.clicked.connect(self._submit_edit)
        layout.addWidget(cancel)
        layout.addWidget(self.send_edit)
        row.setVisible(False)
        return row

    def set_branch(self, branch: int, branches: int) -> None:
        """Show which version this is, when there is more than one."""
        self.branch_label.setText(f"{branch}/{branches}")
        for widget in (self.previous_branch, self.branch_label, self.next_branch):
            widget.setVisible(branches > 1)

    def set_actions_enabled(self, enabled: bool) -> None:
        """Edit, delete, regenerate, continue and branches wait while an answer is generated."""
        for button in (self.edit_button, self.delete_button, self.regenerate_button, self.continue_button, self.previous_branch,
                       self.next_branch):
            button.setEnabled(enabled)

    def start_editing(self) -> None:
        self.editor.setPlainText(self.text)
        for widget, editing in ((self.body, False), (self.editor, True), (self.edit_buttons, True)):
            widget.setVisible(editing)
        self.editor.setFocus()

    def stop_editing(self) -> None:
        for widget, editing in ((self.body, False), (self.editor, True), (self.edit_buttons, True)):
            widget.setVisible(not editing)

    def _submit_edit(self) -> None:
        text = self.editor.toPlainText().strip()
        if text:
            self.stop_editing()
            self.edit_submitted.emit(text)

    def set_text(self, text: str, markdown: bool = False) -> None:
        self.text = text
        if markdown:
            self.body.show_markdown(text)
        else:
            self.body.setPlainText(text)

    def show_stored(self, stored, markdown: bool) -> None:
        """Show a saved message: an answer with its reasoning, tokens, trace and stats line; a question as text, with
        chips for its files."""
        if self.role != "assistant":
            self.set_text(stored.content)
            show_chips(self, stored.attachments)
            return
        self._set_runs(stored.runs, stored.trace)
        self.fold.show_reasoning(stored.reasoning, stored.reasoning_s, split_rounds(stored.trace)[0])
        summary = stored.summary or ("(interrupted)" if stored.finish in ("", "cancelled") else "")
        self.show_cut(stored.finish, len(stored.runs))
        self._offer_to_go_on(can_go_on(self.role, stored.content, stored.finish))
        self.finish(stored.content, summary, markdown)

    def show_streaming(self, answer: StreamingAnswer) -> None:
        """Show the answer being generated as it stands (after a redraw), with no stats line until it ends."""
        self._set_runs(answer.runs, answer.trace)
        self.body.show_tokens()
        if answer.reasoning:
            self.fold.resume(still_thinking=self._last_part == "reasoning", seconds=answer.reasoning_s)
        self.text = answer.text
        self.show_cut("", 0)  # an answer going on is no longer cut
        self._offer_to_go_on(False)
        self.set_waiting(answer.waiting)

    def _set_runs(self, saved: list[list], trace: list[dict]) -> None:
        """Saved runs split between the reasoning and the answer, each token keeping its place in its round."""
        runs = saved_runs(saved)
        self._places = {run.round: run.index + 1 for run in runs}
        answer = [run for run in runs if run.part == "answer"]
        self.fold.view.set_runs([run for run in runs if run.part == "reasoning"], trace)
        self.fold.view.ghosts_elsewhere = {run.round for run in answer}
        self.body.set_runs(answer, trace)
        self._last_part = next((run.part for run in reversed(runs) if run.part != "marker"), "answer")

    def append_events(self, events: list[object]) -> None:
        """Add a batch of the engine's events: reasoning to the fold, the answer to the body, markers to neither."""
        reasoning, answer, records, self._last_part = route(events, self._places, self._last_part)
        for view, runs in ((self.fold.view, reasoning), (self.body, answer)):
            view.rounds.update(records)
            view.append_runs(runs)
        parts = {event.part for event in events if isinstance(event, TokenEvent) and event.text}
        reading = [event for event in events if isinstance(event, PrefillEvent)]
        if reading or any(isinstance(event, TokenEvent) for event in events):  # read: the first token hides it
            still_reading = reading and not any(isinstance(event, TokenEvent) for event in events)
            self.notice.setText(reading_line(reading[-1]) if still_reading else "")
            self.notice.setVisible(bool(still_reading))
        if "reasoning" in parts:
            self.fold.streaming(True)
        if "answer" in parts:
            self.fold.streaming(False)

    def set_show_rejected(self, show: bool) -> None:
        """Show or hide the rejected drafts, in the answer and its reasoning."""
        self.body.set_show_rejected(show)
        self.fold.view.set_show_rejected(show)

    def set_waiting(self, waiting: bool) -> None:
        """Say that the answer waits for the Local server's request (the worker runs one thing at a time)."""
        self.notice.setText(WAITING_FOR_SERVER if waiting else "")
        self.notice.setVisible(waiting)

    def show_cut(self, finish: str, tokens: int) -> None:
        """Mark an answer that ended mid-way (the token limit, the context): "…" after its text, and why under it."""
        notice = cut_notice(finish, tokens)
        self.body.cut_short = bool(notice)
        self.notice.setText(notice)
        self.notice.setVisible(bool(notice))

    def _offer_to_go_on(self, can: bool) -> None:
        self.can_go_on = can
        self.continue_button.setVisible(can)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text)

    def finish(self, text: str, summary: str, markdown: bool) -> None:
        """The answer is complete: keep its text, show its stats line, render Markdown if wanted.

        Text the detokenizer released only at the end is added to the last token's run.
        """
        streamed = "".join(run.text for run in self.body.runs)
        if self.body.runs and text.startswith(streamed) and len(text) > len(streamed):
            self.body.extend_last_run(text[len(streamed) :])
        self.text = text
        self.trace_button.setVisible(bool(self.body.rounds))
        if summary:
            self.stats.setText(summary)
            self.stats.setVisible(True)
        self.show_text(markdown)

    def finish_answer(self, answer: StreamingAnswer, result, summary: str, markdown: bool) -> None:  # GenerationResult
        """The streamed answer ended: where it was cut, its reasoning's final figures, its text (all of it, for an
        answer that went on) and stats line."""
        self.show_cut(result.finish_reason, len(result.tokens))
        self._offer_to_go_on(can_go_on(self.role, answer.text, result.finish_reason))
        self.fold.show_reasoning(answer.reasoning, answer.reasoning_s, result.stats.thinking)
        self.finish(answer.text, summary, markdown)
        if not self.window().isActiveWindow():  # the user went elsewhere while it ran (a long answer on a slow Mac)
            QApplication.alert(self.window())  # the Dock icon bounces once; elsewhere the taskbar entry flashes

    def show_text(self, markdown: bool) -> None:
        """A finished answer as Markdown, or as its coloured tokens (what was saved without runs is Markdown either way)."""
        if markdown or not self.body.runs:
            self.body.show_markdown(self.text)
        else:
            self.body.show_tokens()
