"""A thinking model's reasoning, folded under its answer's header: "Thought for 12 s", a click opens it.

The reasoning keeps the answer's colours (accepted drafts, corrections, bonus tokens, rejected drafts as ghosts),
and beside the header its own speculation figures: how drafts fared while the model was thinking, which the
answer's stats line sets against how they fared while it answered.
"""

from __future__ import annotations

import time

from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from engine.events import PartStats, RoundEvent, TokenEvent

from .fold_button import FoldButton
from .quiet_text import make_quiet
from .token_view import TokenRun, TokenTextView, count_place


def thought_for(seconds: float | None) -> str:
    """The fold's header: "Thinking…" while it does, then how long it took."""
    if seconds is None:
        return "Thinking…"
    return f"Thought for {seconds:.0f} s" if seconds >= 10 else f"Thought for {seconds:.1f} s"


class ReasoningFold(QWidget):
    """The reasoning of one answer, folded (hidden while the answer has none).

    Attributes:
        toggle: the header button ("▸ Thought for 12 s"); checked: unfolded.
        figures: the speculation while thinking, beside the header.
        view: the reasoning's coloured tokens.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reasoningFold")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        row = QHBoxLayout()
        self.view = TokenTextView(self)
        self.view.setStyleSheet("font-style: italic;")
        self.toggle = FoldButton(self.view, "Show or hide what the model thought before answering")
        self.figures = QLabel()
        self.figures.setObjectName("thinkingFigures")
        make_quiet(self.figures, "font-size: 11px;")
        self.figures.setWordWrap(True)
        row.addWidget(self.toggle)
        row.addWidget(self.figures, 1)
        layout.addLayout(row)
        layout.addWidget(self.view)
        self._started: float | None = None
        self.setVisible(False)

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def expand(self, on: bool) -> None:
        """Unfold (or fold) the reasoning."""
        self.toggle.setChecked(on)

    def streaming(self, thinking: bool) -> None:
        """Tokens arrived: while reasoning ones do, the header says so; the first answer token after them stops the
        clock (the engine's own figure replaces it when the answer ends)."""
        now = time.monotonic()
        if thinking and self._started is None:
            self._started = now
            self.toggle.setText(thought_for(None))
            self.setVisible(True)
        elif not thinking and self._started is not None and self.toggle.text() == thought_for(None):
            self.toggle.setText(thought_for(now - self._started))

    def resume(self, still_thinking: bool, seconds: float) -> None:
        """Show an answer's reasoning again mid-stream (its chat was opened again)."""
        self._started = time.monotonic() - seconds
        self.toggle.setText(thought_for(None if still_thinking else seconds))
        self.setVisible(True)
        self.view.show_tokens()

    def show_reasoning(self, reasoning: str, seconds: float, thinking: PartStats) -> None:
        """A finished (or saved) answer's reasoning: how long it took and how speculation fared while it lasted."""
        self.setVisible(bool(reasoning.strip()))
        self.toggle.setText(thought_for(seconds))
        self.figures.setText(f"while thinking: {thinking.speculation()}" if thinking.rounds else "")
        if not self.view.runs:
            self.view.setPlainText(reasoning)
        else:
            self.view.show_tokens()


def route(events: list[object], places: dict[int, int], last_part: str) -> tuple[list, list, dict, str]:
    """A batch of engine events split for the two views of an answer: (reasoning items, answer items, records for
    the other view, the part of the last visible token). Every token is given its place in its round, markers
    included; a round's record goes after the tokens of the view its last visible token went to (its rejected
    drafts follow there), and the other view only keeps it to explain its own tokens of that round."""
    items: dict[str, list] = {"reasoning": [], "answer": []}
    elsewhere: dict[int, dict] = {}
    for event in events:
        if isinstance(event, TokenEvent):
            run = TokenRun(event.text, event.origin, event.round, count_place(places, event.round), event.part)
            if event.part in items:
                items[event.part].append(run)
                last_part = event.part
        elif isinstance(event, RoundEvent):
            record = event.trace_record()
            items[last_part].append(record)
            elsewhere[event.round] = record
    return items["reasoning"], items["answer"], elsewhere, last_part
