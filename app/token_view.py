"""The coloured token view: an answer's tokens tinted by origin, hover for details, Markdown when finished.

An answer streams into a `TokenTextView`, one tinted run per token (accepted, corrected, bonus; plain for target
tokens), each carrying its origin and round so hovering shows them. When the answer is finished it is shown as
Markdown (code blocks framed and highlighted, each with a Copy link) unless the user keeps the token view.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from PySide6.QtCore import QEvent, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication, QTextCharFormat, QTextCursor, QTextFormat, QTextFragment
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QToolTip, QWidget

from engine.events import TokenEvent

from . import markdown_view
from .palette import ORIGIN_LABELS, is_dark, origin_colour

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
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._open_link)
        self.runs: list[TokenRun] = []
        self.code_blocks: list[markdown_view.CodeBlock] = []
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
        self.code_blocks = markdown_view.render(self.document(), text, is_dark(self.palette()))

    def _open_link(self, url: QUrl) -> None:
        """A code block's Copy link copies it; other links open in the browser."""
        if url.scheme() == markdown_view.COPY_SCHEME:
            QGuiApplication.clipboard().setText(self.code_blocks[int(url.path())].code)
        else:
            QDesktopServices.openUrl(url)

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
