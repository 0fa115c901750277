"""The coloured token view: an answer's tokens tinted by origin, every round's decision explained on hover.

An answer streams into a `TokenTextView`, one tinted run per token (accepted, corrected, bonus; plain for target
tokens). Each round's trace record (its whole draft with p(d), q(d) and min(1, p/q)) comes with it: after a
correction the draft tokens the target rejected follow as ghost text (dimmed, struck through; hidden on request),
alternate rounds carry a faint dotted underline, and hovering a token says where it came from and why. When the
answer is finished it is shown as Markdown (code blocks framed and highlighted, each with a Copy link) unless the
user keeps the token view.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from PySide6.QtCore import QEvent, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication, QHelpEvent, QTextCharFormat, QTextCursor, QTextFormat, QTextFragment
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QToolTip, QWidget

from engine.events import RoundEvent, TokenEvent

from . import markdown_view
from .palette import ORIGIN_LABELS, ghost_colour, is_dark, origin_colour, round_mark_colour

ORIGIN_PROPERTY = QTextFormat.Property.UserProperty + 1
ROUND_PROPERTY = QTextFormat.Property.UserProperty + 2
INDEX_PROPERTY = QTextFormat.Property.UserProperty + 3  # a token's place in its round, from 0
GHOST_PROPERTY = QTextFormat.Property.UserProperty + 4  # rejected draft text: the round it belongs to
CUT_MARK = " …"


@dataclass
class TokenRun:
    """One streamed token as the view keeps it (to redraw the coloured view after Markdown).

    Attributes:
        text, origin, round, part: as the TokenEvent had them.
        index: its place among its round's tokens, from 0 (a thinking model's markers included).
    """

    text: str
    origin: str
    round: int
    index: int = 0
    part: str = "answer"


def saved_runs(saved: list[list]) -> list[TokenRun]:
    """Saved [text, origin, round(, part)] runs as the view keeps them (with each token's place in its round)."""
    runs: list[TokenRun] = []
    for text, origin, round_index, *part in saved:
        index = runs[-1].index + 1 if runs and runs[-1].round == round_index else 0
        runs.append(TokenRun(text, origin, round_index, index, *part))
    return runs


def count_place(places: dict[int, int], round_index: int) -> int:
    """The next token's place in its round (from 0), counted in `places`."""
    index = places.get(round_index, 0)
    places[round_index] = index + 1
    return index


def rejected_text(record: dict) -> str:
    """The draft tokens a round's target rejected, from the first rejected one on, as ghost text shows them: line
    breaks as "↵", so that text the answer never had cannot break its lines."""
    if record.get("rejected") is None:
        return ""
    return "".join(record.get("draft_text", [])[record["accepted"] :]).replace("\r\n", "↵").replace("\n", "↵")


def explain(origin: str, round_index: int, index: int, record: dict | None) -> str:
    """What a token's tooltip says: where it came from, and the numbers behind the decision."""
    lines = [f"{ORIGIN_LABELS.get(origin, origin)}, round {round_index + 1}"]
    if record is None:
        return lines[0]
    lines[0] += f" (K = {record['k']}, {record['drafter']})"
    if origin == "accepted" and index < len(record["p"]):
        lines.append(_numbers(record, index))
    elif origin == "corrected" and record.get("rejected") is not None:
        i = record["accepted"]
        lines.append(f"replaces the draft's {record['draft_text'][i]!r}")
        if i < len(record["p"]):
            lines.append(_numbers(record, i))
    elif origin == "bonus":
        lines.append(f"all {record['k']} draft tokens accepted")
    return "\n".join(lines)


def _numbers(record: dict, i: int) -> str:
    return f"p(d) = {record['p'][i]:.3f}, q(d) = {record['q'][i]:.3f}, accepted with probability {record['accept_p'][i]:.3f}"


class TokenTextView(QTextBrowser):
    """A read-only text view of streamed tokens that explains each one on hover.

    Args:
        grow: grow with the content (inside the chat column) instead of scrolling (a fixed-size pane).

    Attributes:
        runs: the tokens, in order.
        rounds: each round's trace record (RoundEvent.trace_record), by round index.
        show_rejected: draw rejected draft tokens as ghost text after their correction.
        cut_short: the answer was cut short (at the token limit): both views end it with a dimmed "…" (not `cut`,
            which would hide Qt's cut() slot).
        ghosts_elsewhere: rounds whose rejected drafts the other view shows (the round ends there).
    """

    def __init__(self, parent: QWidget | None = None, grow: bool = True) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._open_link)
        self.runs: list[TokenRun] = []
        self.rounds: dict[int, dict] = {}
        self.show_rejected = True
        self.cut_short = False
        self.ghosts_elsewhere: set[int] = set()
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

    def set_tokens(self, saved: list[list], trace: list[dict]) -> None:
        """Take a saved answer's [text, origin, round] runs and trace records (drawn by show_tokens or finish)."""
        self.set_runs(saved_runs(saved), trace)

    def set_runs(self, runs: list[TokenRun], trace: list[dict]) -> None:
        """Take runs (their places in their rounds already counted) and the trace records that explain them."""
        self.runs = runs
        self.rounds = {record["round"]: record for record in trace}

    # --- streaming ------------------------------------------------------------------------------------------

    def append_events(self, events: list[object]) -> None:
        """Add a batch of engine events: tokens as tinted runs; after each round, its rejected drafts."""
        cursor = self._end()
        cursor.beginEditBlock()
        for event in events:
            if isinstance(event, TokenEvent):
                self._append(cursor, TokenRun(event.text, event.origin, event.round, self._next_index(event.round)))
            elif isinstance(event, RoundEvent):
                self._add_record(cursor, event.trace_record(), ghost=True)
        cursor.endEditBlock()

    def _add_record(self, cursor: QTextCursor, record: dict, ghost: bool) -> None:
        self.rounds[record["round"]] = record
        if ghost and self.show_rejected:
            self._insert_ghost(cursor, record)

    def append_tokens(self, events: list[TokenEvent]) -> None:
        """Add streamed tokens at the end, each tinted by its origin."""
        self.append_events(list(events))

    def append_runs(self, runs: list[TokenRun | dict]) -> None:
        """Add runs whose places in their rounds are counted already; a trace record among them ends its round
        here (its rejected drafts follow)."""
        cursor = self._end()
        cursor.beginEditBlock()
        for run in runs:
            if isinstance(run, dict):
                self._add_record(cursor, run, ghost=True)
            else:
                self._append(cursor, run)
        cursor.endEditBlock()

    def _next_index(self, round_index: int) -> int:
        last = self.runs[-1] if self.runs else None
        return last.index + 1 if last is not None and last.round == round_index else 0

    def _append(self, cursor: QTextCursor, run: TokenRun) -> None:
        self.runs.append(run)
        self._insert(cursor, run)

    def _end(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def extend_last_run(self, tail: str) -> None:
        """Add text to the last token (what the detokenizer released only at the end)."""
        last = self.runs[-1]
        last.text += tail
        self._insert(self._end(), TokenRun(tail, last.origin, last.round, last.index))

    def _insert(self, cursor: QTextCursor, run: TokenRun) -> None:
        if not run.text:
            return
        fmt = QTextCharFormat()
        colour = origin_colour(run.origin, self.palette())
        if colour is not None:
            fmt.setBackground(colour)
        if run.round % 2:  # round boundaries: visible, but quiet
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.DotLine)
            fmt.setUnderlineColor(round_mark_colour(self.palette()))
        fmt.setProperty(ORIGIN_PROPERTY, run.origin)
        fmt.setProperty(ROUND_PROPERTY, run.round)
        fmt.setProperty(INDEX_PROPERTY, run.index)
        cursor.insertText(run.text, fmt)

    def _insert_ghost(self, cursor: QTextCursor, record: dict) -> None:
        text = rejected_text(record)
        if not text:
            return
        fmt = QTextCharFormat()
        fmt.setForeground(ghost_colour(self.palette()))
        fmt.setFontStrikeOut(True)
        fmt.setProperty(GHOST_PROPERTY, record["round"])
        cursor.insertText(text, fmt)

    # --- redrawing ------------------------------------------------------------------------------------------

    def set_show_rejected(self, show: bool) -> None:
        """Show or hide the rejected drafts (redraws the token view if it is shown)."""
        self.show_rejected = show
        if self.runs and not self._showing_markdown:
            self.show_tokens()

    def show_tokens(self) -> None:
        """Redraw the coloured token view from the kept runs, each round's rejected drafts after it."""
        self._showing_markdown = False
        self.clear()
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()
        for i, run in enumerate(self.runs):
            self._insert(cursor, run)
            ends_round = i + 1 == len(self.runs) or self.runs[i + 1].round != run.round
            if ends_round and self.show_rejected and run.round in self.rounds and run.round not in self.ghosts_elsewhere:
                self._insert_ghost(cursor, self.rounds[run.round])
        cursor.endEditBlock()
        self._mark_cut()

    _showing_markdown = False

    def show_markdown(self, text: str) -> None:
        self._showing_markdown = True
        self.code_blocks = markdown_view.render(self.document(), text, is_dark(self.palette()))
        self._mark_cut()

    def _mark_cut(self) -> None:
        """End a cut answer with "…" (dimmed, and no token's: copying and reading the tokens back leave it out)."""
        if not self.cut_short:
            return
        cursor = self._end()
        if self._showing_markdown and not cursor.block().text():
            cursor.movePosition(QTextCursor.MoveOperation.PreviousBlock)
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
        fmt = QTextCharFormat()
        fmt.setForeground(ghost_colour(self.palette()))
        cursor.insertText(CUT_MARK, fmt)

    def answer_text(self) -> str:
        """The text the tokens make, without the rejected drafts shown among them."""
        return "".join(run.text for run in self.runs)

    def _open_link(self, url: QUrl) -> None:
        """A code block's Copy link copies it; other links open in the browser."""
        if url.scheme() == markdown_view.COPY_SCHEME:
            QGuiApplication.clipboard().setText(self.code_blocks[int(url.path())].code)
        else:
            QDesktopServices.openUrl(url)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        """Re-tint the tokens when the system switches between light and dark mode mid-conversation."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.runs and not self._showing_markdown:
            self.show_tokens()

    # --- reading back -----------------------------------------------------------------------------------------

    def fragments(self, prop: int) -> Iterator[QTextFragment]:
        """The document's runs of text whose format carries `prop` (a token's origin, or a ghost's round)."""
        block = self.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.charFormat().property(prop) is not None:
                    yield fragment
                it += 1
            block = block.next()

    def token_fragments(self) -> Iterator[QTextFragment]:
        """The document's runs of text that came from streamed tokens (they carry an origin)."""
        return self.fragments(ORIGIN_PROPERTY)

    def ghost_fragments(self) -> Iterator[QTextFragment]:
        """The rejected draft text shown after corrections."""
        return self.fragments(GHOST_PROPERTY)

    def origin_at(self, position: int) -> tuple[str, int] | None:
        """(origin, round) of the character at a document position, if it is a streamed token."""
        fmt = self._format_at(position)
        origin = fmt.property(ORIGIN_PROPERTY)
        return (str(origin), int(fmt.property(ROUND_PROPERTY))) if origin else None

    def _format_at(self, position: int) -> QTextCharFormat:
        cursor = QTextCursor(self.document())
        cursor.setPosition(min(position + 1, max(self.document().characterCount() - 1, 0)))
        return cursor.charFormat()

    def tooltip_at(self, position: int) -> str | None:
        """The explanation of the token (or rejected draft) at a document position."""
        fmt = self._format_at(position)
        ghost = fmt.property(GHOST_PROPERTY)
        if ghost is not None:
            record = self.rounds.get(int(ghost))
            return f"rejected draft of round {int(ghost) + 1}" + (f": {rejected_text(record)!r}" if record else "")
        origin = fmt.property(ORIGIN_PROPERTY)
        if not origin:
            return None
        round_index = int(fmt.property(ROUND_PROPERTY))
        return explain(str(origin), round_index, int(fmt.property(INDEX_PROPERTY) or 0), self.rounds.get(round_index))

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if isinstance(event, QHelpEvent) and event.type() == QEvent.Type.ToolTip:
            position = self.document().documentLayout().hitTest(event.pos(), Qt.HitTestAccuracy.ExactHit)
            text = self.tooltip_at(position) if position >= 0 else None
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)
