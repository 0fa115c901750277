"""One MCP tool call inside an answer: what the model asked to run, the user's Allow once / Always / Deny, and
the result folded under the call (an error or a timeout is its one line, shown open).

The card only shows and asks; the chat's tools decide what runs (app/chat_tools.py), so the verdict leaves as
a signal and the call's saved record comes back to `show_record`.
"""

from __future__ import annotations

import time
from html import escape

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from engine.mcp_tools.hub import ToolOutcome
from engine.mcp_tools.saved_calls import CallRecord, call_line

from .fold_button import FoldButton
from .palette import notice_colour

VERDICTS = (("once", "Allow once"), ("always", "Always"), ("deny", "Deny"))
RESULT_LINES = 10  # the most lines of a result shown unfolded before it scrolls


class ToolCallCard(QFrame):
    """A call, its permission prompt while asked, then its result.

    Attributes:
        decided: the user's verdict, "once", "always" or "deny".
        buttons: the verdict buttons by verdict, shown while the card asks.
        toggle: the result's fold header; checked: unfolded.
        result: the result's text under the fold.
        status: "Running… 3 s", or the one line of an error, a denial, a stop or a timeout.
    """

    decided = Signal(str)

    def __init__(self, name: str, arguments: str, server: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("toolCallCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)  # as tall as its lines, never padded
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        where = f" &nbsp;<span style='color: gray'>· {escape(server)}</span>" if server else ""
        title = QLabel(f"<b>{escape(call_line(name, arguments))}</b>{where}")
        title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        title.setWordWrap(True)
        layout.addWidget(title)
        self.ask_row = QWidget()
        row = QHBoxLayout(self.ask_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel(f"Run the tool {name}?"))
        self.buttons = {verdict: QPushButton(text) for verdict, text in VERDICTS}
        for verdict, button in self.buttons.items():
            button.clicked.connect(lambda _=False, v=verdict: self._decide(v))
            row.addWidget(button)
        row.addStretch(1)
        layout.addWidget(self.ask_row)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setVisible(False)
        layout.addWidget(self.status)
        self.result = QPlainTextEdit()
        self.result.setReadOnly(True)
        self.toggle = FoldButton(self.result, "Show or hide what the tool returned")
        layout.addWidget(self.toggle)
        layout.addWidget(self.result)
        self.toggle.setVisible(False)
        self.ask_row.setVisible(False)
        self._since = 0.0
        self._clock = QTimer(self, interval=1000)
        self._clock.timeout.connect(self._tick)

    def show_record(self, record: CallRecord, live: bool = False, asking: bool = False) -> None:
        """The call as it stands: asking (with the buttons), running (with its seconds), or its outcome; a call saved
        unfinished by a quit (not `live`) reads as interrupted."""
        self.ask_row.setVisible(live and asking)
        self._clock.stop()
        if live and record.state == "running":
            self._since = time.monotonic()
            self._clock.start()
            self._tick()
        elif live and record.state == "asking":
            self._say("" if asking else "Waiting for the calls before it…")
        else:
            self._show_outcome(record.outcome(live))

    def _show_outcome(self, outcome: ToolOutcome) -> None:
        """A result folded under the call; an error, a denial or a timeout as its line, open."""
        if outcome.is_error:
            self._say(outcome.text)
            self.status.setStyleSheet(f"color: {notice_colour().name()};")
            return
        self._say("")
        lines = outcome.text.count("\n") + 1
        self.toggle.setText(f"Result ({lines} line{'s' if lines != 1 else ''})")
        self.toggle.setVisible(True)
        self.result.setPlainText(outcome.text)
        shown = min(lines, RESULT_LINES)  # a short result in a short box, a long one scrolls
        self.result.setFixedHeight(self.result.fontMetrics().lineSpacing() * shown + 2 * self.result.frameWidth() + 10)
        self.expand(False)

    def _tick(self) -> None:
        self._say(f"Running… {time.monotonic() - self._since:.0f} s (Stop ends it)")

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def expand(self, on: bool) -> None:
        """Unfold (or fold) the result."""
        self.toggle.setChecked(on)

    def _say(self, line: str) -> None:
        self.status.setText(line)
        self.status.setVisible(bool(line))

    def _decide(self, verdict: str) -> None:
        self.ask_row.setVisible(False)
        self.decided.emit(verdict)

