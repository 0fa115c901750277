"""The conversation column: the messages (message_widget.py) one under the other, scrolling, following new text
while the user is at the bottom."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QVBoxLayout, QWidget

from .message_widget import MessageWidget
from .quiet_text import make_quiet
from .streaming_answer import StreamingAnswer


class ChatView(QScrollArea):
    """The scrolling column of messages; follows new text while the user is at the bottom.

    Attributes:
        show_rejected: whether answers show their rejected drafts as ghost text.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.container = container = QWidget()
        self.column = QVBoxLayout(container)
        self.column.setContentsMargins(12, 12, 12, 12)
        self.column.setSpacing(10)
        self.placeholder = QLabel("Ask anything. Accepted draft tokens, corrections and bonus tokens are coloured as they stream.")
        self.placeholder.setWordWrap(True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        make_quiet(self.placeholder, "padding: 40px;")
        self.column.addWidget(self.placeholder)
        self.column.addStretch()
        self.setWidget(container)
        container.installEventFilter(self)
        self.messages: list[MessageWidget] = []
        self.show_rejected = True
        self._follow = True
        self.verticalScrollBar().rangeChanged.connect(self._keep_following)
        self.verticalScrollBar().valueChanged.connect(self._note_position)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """As narrow as the messages can wrap, plus the scroll bar: a splitter never squeezes them under it."""
        hint = super().minimumSizeHint()
        return QSize(self.container.minimumSizeHint().width() + self.verticalScrollBar().sizeHint().width(), hint.height())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        """The messages were laid out again (added, wrapped, given branch arrows): their narrowest may have changed."""
        if watched is self.container and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()
        return super().eventFilter(watched, event)

    def clear(self) -> None:
        for message in self.messages:
            self._discard(message)
        self.messages = []
        self.placeholder.setVisible(True)

    def add_message(self, role: str, text: str = "", markdown: bool = False) -> MessageWidget:
        message = MessageWidget(role)
        message.body.show_rejected = message.fold.view.show_rejected = self.show_rejected
        if text:
            message.set_text(text, markdown=markdown and role == "assistant")
        self.column.insertWidget(self.column.count() - 1, message)
        self.messages.append(message)
        self.placeholder.setVisible(False)
        self._follow = True
        self._update_regenerate()
        return message

    def answer_view(self, answer: StreamingAnswer) -> MessageWidget:
        """Where a streaming answer shows: its message when it goes on from one shown, else a new message."""
        going_on = next((m for m in self.messages if m.message_id == answer.message_id), None) if answer.earlier else None
        if going_on is None:
            return self.add_message("assistant")
        going_on.show_streaming(answer)
        self._update_regenerate()
        return going_on

    def remove_message(self, message: MessageWidget) -> None:
        self.messages.remove(message)
        self._discard(message)
        self._update_regenerate()
        self.placeholder.setVisible(not self.messages)

    def _discard(self, message: MessageWidget) -> None:
        """Out of the column and out of sight now (it is deleted when the event loop next runs)."""
        self.column.removeWidget(message)
        message.hide()
        message.deleteLater()

    def set_show_rejected(self, show: bool) -> None:
        """Show or hide the rejected drafts in every answer (and in answers added later)."""
        self.show_rejected = show
        for message in self.messages:
            message.set_show_rejected(show)

    def set_busy(self, busy: bool) -> None:
        """While an answer is generated, the actions that change the conversation wait."""
        for message in self.messages:
            message.set_actions_enabled(not busy)

    def _update_regenerate(self) -> None:
        """Regenerate, and Continue for an answer that ended short of its own end, on the last message only."""
        for index, message in enumerate(self.messages):
            last = index == len(self.messages) - 1
            message.regenerate_button.setVisible(message.role == "assistant" and last)
            message.continue_button.setVisible(message.can_go_on and last)

    def _note_position(self, value: int) -> None:
        self._follow = value >= self.verticalScrollBar().maximum() - 30

    def _keep_following(self, _minimum: int, maximum: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(maximum)
