"""Compare: the same prompt decoded two ways, side by side, with the two speeds and how they compare.

Each side is standard decoding or one drafter, picked above its column (standard against the chat's drafter at
first; draft model against lookup, MTP against standard, EAGLE-3 against a draft model, ...); "Run" runs the pick.
The comparison is fair by construction (session.compare): the same settings but for the drafter, both runs from an
empty prompt cache, their order alternating between Compares; the dialog says which ran first, and sets tokens per
pass and acceptance beside the speeds, since they explain them; Stop ends both runs, and draws no verdict from
them. A side the loaded pair cannot run (an MTP head on a target without one) shows the engine's one line saying
why, and the other side runs still.
"""

from __future__ import annotations

import html
from collections import Counter

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QComboBox, QDialog, QGridLayout, QLabel, QPushButton, QWidget

from engine.comparison import STANDARD, runnable_sides, side_heading, side_label, sides, verdict
from engine.drafter_kinds import drafter_label
from engine.errors import SpecChatError
from engine.events import GenerationResult, RoundEvent

from .quiet_text import make_quiet
from .screen_fit import fitted, screen_room
from .session import ChatSession
from .streaming_answer import stopped_before_first_token
from .token_view import TokenTextView

PREFERRED = QSize(980, 600)  # the dialog's size where the screen has room


class CompareDialog(QDialog):
    """Two columns, each a way of decoding the user picks, filled as the two generations stream. It opens on
    `picked` (the last Compare's sides) while the pair can run them, else on standard against the chat's drafter.

    Attributes:
        sides: the two sides of the last run, left and right ("standard" or a drafter).
        pickers: the left and right choice of side.
        request_ids: the worker request of each side of the last run, in the order they run.
        pending: the sides of the last run still running (Run waits for them).
        results: each side's GenerationResult once finished.
        drafters: per side, the rounds each drafter drafted (from the RoundEvents: who actually drafted).
        views, speeds: each side's tokens and stats line.
    """

    def __init__(self, messages: list[dict[str, str]], conversation_id: int | None, session: ChatSession,
                 parent: QWidget | None = None, picked: tuple[str, str] | None = None) -> None:
        super().__init__(parent)
        self.session, self.messages, self.conversation_id = session, messages, conversation_id
        session.compare_events.connect(self.add_events)  # each dialog picks its own requests' events
        session.compare_finished.connect(self.finish)
        session.compare_failed.connect(self.fail)
        self.setWindowTitle("Compare two ways of decoding")
        self.sides: tuple[str, str] = picked if picked and set(picked) <= set(self._offered()) else session.compare_sides()
        self.request_ids: dict[str, int] = {}
        self.pending: set[str] = set()  # the sides of the last run still running
        self.results: dict[str, GenerationResult] = {}
        self.drafters: dict[str, Counter] = {}
        self.views: dict[str, TokenTextView] = {}
        self.speeds: dict[str, QLabel] = {}
        self.grid = QGridLayout(self)
        heading = QLabel(f"<b>Prompt:</b> {html.escape(messages[-1]['content'][:300])}")
        heading.setWordWrap(True)
        self.grid.addWidget(heading, 0, 0, 1, 2)
        self.pickers = [self._picker(side, column) for column, side in enumerate(self.sides)]
        self.columns = [self._column(column) for column in range(2)]
        self.speedup = QLabel("")
        self.speedup.setObjectName("speedup")
        self.speedup.setStyleSheet("font-size: 16px; font-weight: bold;")
        self.speedup.setWordWrap(True)  # one long line grew the dialog to 1444 px, off a 1600 px screen
        self.grid.addWidget(self.speedup, 4, 0, 1, 2)
        self.fairness = QLabel("")
        self.fairness.setObjectName("fairness")
        self.fairness.setWordWrap(True)
        make_quiet(self.fairness)
        self.grid.addWidget(self.fairness, 5, 0)
        self.grid.addWidget(self._buttons(), 5, 1)
        self.resize(fitted(PREFERRED, screen_room(parent or self)))  # off a 900x600 screen at 980x600, buttons and all
        self.run()

    def _offered(self) -> tuple[str, ...]:
        """The sides the pair can run (the last Compare's pick is kept while it can)."""
        pair = self.session.pair
        return runnable_sides(pair.drafters) if pair is not None else sides()

    def _picker(self, side: str, column: int) -> QComboBox:
        picker = QComboBox()
        picker.setObjectName(f"side{column}")
        for choice in self._offered():
            picker.addItem(side_heading(choice) + ("" if choice == STANDARD else " (speculative)"), choice)
        picker.setCurrentIndex(max(0, picker.findData(side)))
        picker.currentIndexChanged.connect(self._side_changed)
        self.grid.addWidget(picker, 1, column)
        self.grid.setColumnStretch(column, 1)  # equal halves, whatever each side's text
        return picker

    def _side_changed(self, *_: object) -> None:
        """A side picked after a run: the verdict named the side it replaced (a run in progress keeps its line)."""
        if not self.pending:
            self.speedup.setText("")

    def _column(self, column: int) -> tuple[TokenTextView, QLabel]:
        view = TokenTextView(grow=False)
        view.setMinimumHeight(120)  # the rest of the height is the dialog's to give where the screen has it
        speed = QLabel("waiting…")
        speed.setWordWrap(True)
        speed.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)  # the two sides' lines level
        self.grid.addWidget(view, 2, column)
        self.grid.addWidget(speed, 3, column)
        return view, speed

    def _buttons(self) -> QWidget:
        box = QWidget()
        row = QGridLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        self.run_button = QPushButton("Run")
        self.run_button.setToolTip("Run the prompt again with the two ways picked above")
        self.run_button.clicked.connect(self.run)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop both runs (each keeps what it generated; no verdict is drawn)")
        self.stop_button.clicked.connect(self.session.stop_compare)
        self.stop_button.setEnabled(False)  # until a run starts
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        row.addWidget(self.run_button, 0, 0)
        row.addWidget(self.stop_button, 0, 1)
        row.addWidget(close, 0, 2)
        return box

    def run(self) -> None:
        """Run the two sides picked; a pick that cannot run is refused in one line instead."""
        picked = (self.pickers[0].currentData(), self.pickers[1].currentData())
        if not self.session.ready:
            self.speedup.setText("Compare needs loaded models and no answer in progress: wait for the answer, then Run.")
            return
        try:
            request_ids = self.session.compare(self.conversation_id, self.messages, picked)
        except SpecChatError as error:
            self.speedup.setText(str(error))
            return
        self.sides, self.request_ids, self.results, self.pending = picked, request_ids, {}, set(picked)
        self.drafters = {side: Counter() for side in picked}
        for column, side in enumerate(picked):
            self._reset_column(column)
            self.views[side], self.speeds[side] = self.columns[column]
            self.speeds[side].setObjectName(f"speed_{side}")
        self.speedup.setText("")
        first, second = (side_label(side) for side in request_ids)
        self.fairness.setText(f"Both runs start from an empty prompt cache with the same settings (and seed); {first} runs first, "
                              f"then {second} (the order alternates from one Compare to the next).")
        self.run_button.setEnabled(False)
        self.stop_button.setEnabled(True)

    def _reset_column(self, column: int) -> None:
        """Empty a column's tokens and stats line for a new run."""
        view, speed = self.columns[column]
        view.set_runs([], [])
        view.show_tokens()
        speed.setText("waiting…")

    def side_of(self, request_id: int) -> str | None:
        return next((s for s, r in self.request_ids.items() if r == request_id), None)

    def add_events(self, request_id: int, events: list[object]) -> None:
        side = self.side_of(request_id)
        if side:
            self.speeds[side].setText("generating…")
            self.views[side].append_events(events)
            self.drafters[side].update(e.drafter for e in events if isinstance(e, RoundEvent))

    def finish(self, request_id: int, result: GenerationResult) -> None:
        side = self.side_of(request_id)
        if side is None:
            return
        self.results[side] = result
        drafted = "" if side == STANDARD else "\n" + drafters_line(self.drafters[side])
        if result.finish_reason != "cancelled":
            self.speeds[side].setText(result.summary() + drafted)
        else:
            self.speeds[side].setText("Stopped before it started." if stopped_before_first_token(result) else
                                      result.summary() + " (stopped)" + drafted)
        if len(self.results) == 2:
            left, right = self.sides
            cut = any(r.finish_reason == "cancelled" for r in self.results.values())
            self.speedup.setText("Stopped: runs cut short are no measure of each other; Run again to compare." if cut else
                                 verdict(left, self.results[left], right, self.results[right]))
        self._end_of(side)

    def fail(self, request_id: int, message: str) -> None:
        side = self.side_of(request_id)
        if side:
            self.speeds[side].setText(message)
            self._end_of(side)

    def _end_of(self, side: str) -> None:
        """A side is done (finished or refused): once both are, the user may run another pick."""
        self.pending.discard(side)
        self.run_button.setEnabled(not self.pending)
        self.stop_button.setEnabled(bool(self.pending))


def drafters_line(rounds: Counter) -> str:
    """Which drafters ran, in how many rounds, by the names the rest of the window gives them ("DSpark drafter", not
    "dspark"); lookup here never drafts from saved answers to this question."""
    drafted = [(name, n) for name, n in rounds.most_common() if name != "none"]
    if not drafted:
        return "Nothing was drafted: this side ran as standard decoding."
    parts = ", ".join(f"{drafter_label(name)} in {n} round{'s' * (n != 1)}" for name, n in drafted)
    plain = f"; {rounds['none']} round{'s' * (rounds['none'] != 1)} drafted nothing" if rounds["none"] else ""
    lookup = " (lookup left out saved chats that asked this question)" if "lookup" in rounds else ""
    return f"Drafted by {parts}{plain}{lookup}."
