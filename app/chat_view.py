"""The conversation column: messages, streamed answers with coloured tokens, Markdown when finished.

An answer streams into a `TokenTextView`, one tinted run per token (accepted, corrected, bonus; plain for
target tokens), each carrying its origin and round so hovering shows them. When the answer is finished it is
shown as Markdown (code blocks included) unless the user keeps the token view.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QGuiApplication, QTextCharFormat, QTextCursor, QTextFormat, QTextFragment
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QTextBrowser,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from engine.events import TokenEvent

from .palette import ORIGIN_LABELS, origin_colour

ORIGIN_PROPERTY = QTextFormat.Property.UserProperty + 1
ROUND_PROPERTY = QTextFormat.Property.UserProperty + 2


@dataclass
class TokenRun:
    """One streamed token as the view keeps it (to redraw the coloured view after Markdown)."""

    text: str
    origin: str
    round: int


class TokenTextView(QTextBrowser):
    """A read-only text view that shows token origins on hover.

    Args:
        grow: grow with the content (inside the chat column) instead of scrolling (a fixed-size pane).
    """

    def __init__(self, parent: QWidget | None = None, grow: bool = True) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(True)
        self.runs: list[TokenRun] = []
        if grow:
            self.setFrameShape(QFrame.Shape.NoFrame)
            self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            self.document().setDocumentMargin(2)
            self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
            self._fit_height()

    def _fit_height(self, *_: object) -> None:
        height = int(self.document().size().height()) + 4
        if self.height() != height:
            self.setFixedHeight(max(height, 20))

    def append_tokens(self, events: list[TokenEvent]) -> None:
        """Add streamed tokens at the end, each tinted by its origin."""
        self.append_runs([TokenRun(e.text, e.origin, e.round) for e in events])

    def append_runs(self, runs: list[TokenRun]) -> None:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()
        for run in runs:
            self.runs.append(run)
            self._insert(cursor, run.text, run.origin, run.round)
        cursor.endEditBlock()

    def extend_last_run(self, tail: str) -> None:
        """Add text to the last token (what the detokenizer released only at the end)."""
        last = self.runs[-1]
        last.text += tail
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        self._insert(cursor, tail, last.origin, last.round)

    def _insert(self, cursor: QTextCursor, text: str, origin: str, round_index: int) -> None:
        if not text:
            return
        fmt = QTextCharFormat()
        colour = origin_colour(origin, self.palette())
        if colour is not None:
            fmt.setBackground(colour)
        fmt.setProperty(ORIGIN_PROPERTY, origin)
        fmt.setProperty(ROUND_PROPERTY, round_index)
        cursor.insertText(text, fmt)

    def show_tokens(self) -> None:
        """Redraw the coloured token view from the kept runs."""
        self.clear()
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()
        for run in self.runs:
            self._insert(cursor, run.text, run.origin, run.round)
        cursor.endEditBlock()

    def show_markdown(self, text: str) -> None:
        self.document().setMarkdown(text)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        """Re-tint the tokens when the system switches between light and dark mode mid-conversation."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._retint()

    def token_fragments(self) -> Iterator[QTextFragment]:
        """The document's runs of text that came from streamed tokens (they carry an origin)."""
        block = self.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.charFormat().property(ORIGIN_PROPERTY):
                    yield fragment
                it += 1
            block = block.next()

    def _retint(self) -> None:
        # Collected first: editing formats while walking the fragments would invalidate them.
        spans = [(f.position(), f.length(), str(f.charFormat().property(ORIGIN_PROPERTY))) for f in self.token_fragments()]
        cursor = QTextCursor(self.document())
        for position, length, origin in spans:
            colour = origin_colour(origin, self.palette())
            if colour is None:
                continue
            cursor.setPosition(position)
            cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
            fmt = QTextCharFormat()
            fmt.setBackground(colour)
            cursor.mergeCharFormat(fmt)

    def origin_at(self, position: int) -> tuple[str, int] | None:
        """(origin, round) of the character at a document position, if it is a streamed token."""
        cursor = QTextCursor(self.document())
        cursor.setPosition(min(position + 1, max(self.document().characterCount() - 1, 0)))
        fmt = cursor.charFormat()
        origin = fmt.property(ORIGIN_PROPERTY)
        return (str(origin), int(fmt.property(ROUND_PROPERTY))) if origin else None

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.ToolTip:
            point = event.pos()
            position = self.document().documentLayout().hitTest(point, Qt.HitTestAccuracy.ExactHit)
            found = self.origin_at(position) if position >= 0 else None
            if found:
                origin, round_index = found
                QToolTip.showText(event.globalPos(), f"{ORIGIN_LABELS.get(origin, origin)}, round {round_index + 1}", self)
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)


class MessageWidget(QFrame):
    """One message: who said it, its text, and for answers a stats line.

    Signals:
        regenerate_requested(): the Regenerate button was clicked (last answer only).
    """

    regenerate_requested = Signal()

    def __init__(self, role: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = role
        self.text = ""
        self.setObjectName("userMessage" if role == "user" else "assistantMessage")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        header = QHBoxLayout()
        self.speaker = QLabel("You" if role == "user" else "Assistant")
        self.speaker.setStyleSheet("font-weight: bold;")
        header.addWidget(self.speaker)
        header.addStretch()
        self.copy_button = QToolButton(text="Copy")
        self.copy_button.setToolTip("Copy this message")
        self.copy_button.clicked.connect(self.copy)
        header.addWidget(self.copy_button)
        self.regenerate_button = QToolButton(text="Regenerate")
        self.regenerate_button.setToolTip("Generate this answer again")
        self.regenerate_button.clicked.connect(self.regenerate_requested)
        self.regenerate_button.setVisible(False)
        header.addWidget(self.regenerate_button)
        layout.addLayout(header)
        self.body = TokenTextView(self)
        layout.addWidget(self.body)
        self.stats = QLabel()
        self.stats.setObjectName("statsLine")
        self.stats.setStyleSheet("color: palette(mid); font-size: 11px;")
        self.stats.setVisible(False)
        layout.addWidget(self.stats)

    def set_text(self, text: str, markdown: bool = False) -> None:
        self.text = text
        if markdown:
            self.body.show_markdown(text)
        else:
            self.body.setPlainText(text)

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
        if summary:
            self.stats.setText(summary)
            self.stats.setVisible(True)
        self.render(markdown)

    def render(self, markdown: bool) -> None:
        if markdown or not self.body.runs:
            self.body.show_markdown(self.text)
        else:
            self.body.show_tokens()


class ChatView(QScrollArea):
    """The scrolling column of messages; follows new text while the user is at the bottom."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        container = QWidget()
        self.column = QVBoxLayout(container)
        self.column.setContentsMargins(12, 12, 12, 12)
        self.column.setSpacing(10)
        self.placeholder = QLabel("Ask anything. Accepted draft tokens, corrections and bonus tokens are coloured as they stream.")
        self.placeholder.setWordWrap(True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setStyleSheet("color: palette(mid); padding: 40px;")
        self.column.addWidget(self.placeholder)
        self.column.addStretch()
        self.setWidget(container)
        self.messages: list[MessageWidget] = []
        self._follow = True
        self.verticalScrollBar().rangeChanged.connect(self._keep_following)
        self.verticalScrollBar().valueChanged.connect(self._note_position)

    def clear(self) -> None:
        for message in self.messages:
            self.column.removeWidget(message)
            message.deleteLater()
        self.messages = []
        self.placeholder.setVisible(True)

    def add_message(self, role: str, text: str = "", markdown: bool = False) -> MessageWidget:
        message = MessageWidget(role)
        if text:
            message.set_text(text, markdown=markdown and role == "assistant")
        self.column.insertWidget(self.column.count() - 1, message)
        self.messages.append(message)
        self.placeholder.setVisible(False)
        self._follow = True
        self._update_regenerate()
        return message

    def remove_message(self, message: MessageWidget) -> None:
        self.messages.remove(message)
        self.column.removeWidget(message)
        message.deleteLater()
        self._update_regenerate()
        self.placeholder.setVisible(not self.messages)

    def _update_regenerate(self) -> None:
        for index, message in enumerate(self.messages):
            message.regenerate_button.setVisible(message.role == "assistant" and index == len(self.messages) - 1)

    def _note_position(self, value: int) -> None:
        self._follow = value >= self.verticalScrollBar().maximum() - 30

    def _keep_following(self, _minimum: int, maximum: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(maximum)
