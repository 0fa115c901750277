"""Compare: the same prompt decoded both ways, side by side, with the two speeds and the speedup.

The comparison is fair by construction (session.compare): both runs start from an empty prompt cache and
their order alternates between Compares; the dialog says which ran first, and sets tokens per pass and
acceptance beside the speeds, since they explain the speedup.
"""

from __future__ import annotations

import html
from collections import Counter

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QDialog, QGridLayout, QLabel, QPushButton, QWidget

from engine.events import GenerationResult, RoundEvent

from .token_view import TokenTextView


class CompareDialog(QDialog):
    """Two columns (standard, speculative) filled as the two generations stream.

    Attributes:
        request_ids: the worker request of each side, {"standard": id, "speculative": id}.
        results: each side's GenerationResult once finished.
    """

    SIDES = ("standard", "speculative")

    def __init__(self, prompt: str, request_ids: dict[str, int], session: QObject, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        session.compare_events.connect(self.add_events)  # each dialog picks its own requests' events
        session.compare_finished.connect(self.finish)
        session.compare_failed.connect(self.fail)
        self.setWindowTitle("Compare: standard vs speculative decoding")
        self.resize(980, 560)
        self.request_ids = request_ids
        self.results: dict[str, GenerationResult] = {}
        self.drafters: dict[str, Counter] = {side: Counter() for side in self.SIDES}  # rounds per drafter
        grid = QGridLayout(self)
        heading = QLabel(f"<b>Prompt:</b> {html.escape(prompt[:300])}")
        heading.setWordWrap(True)
        grid.addWidget(heading, 0, 0, 1, 2)
        first, second = list(request_ids)
        self.fairness = QLabel(f"Both runs start from an empty prompt cache; {first} runs first, then {second} "
                               "(the order alternates from one Compare to the next).")
        self.fairness.setObjectName("fairness")
        self.fairness.setWordWrap(True)
        self.fairness.setStyleSheet("color: palette(mid);")
        grid.addWidget(self.fairness, 5, 0)
        self.views: dict[str, TokenTextView] = {}
        self.speeds: dict[str, QLabel] = {}
        for column, side in enumerate(self.SIDES):
            grid.addWidget(QLabel(f"<b>{side.capitalize()} decoding</b>"), 1, column)
            view = TokenTextView(grow=False)
            view.setMinimumHeight(320)
            self.views[side] = view
            grid.addWidget(view, 2, column)
            self.speeds[side] = QLabel("waiting…")
            self.speeds[side].setWordWrap(True)
            self.speeds[side].setObjectName(f"speed_{side}")
            grid.addWidget(self.speeds[side], 3, column)
        for column in range(len(self.SIDES)):
            grid.setColumnStretch(column, 1)  # equal halves, whatever each side's text
        self.speedup = QLabel("")
        self.speedup.setObjectName("speedup")
        self.speedup.setStyleSheet("font-size: 16px; font-weight: bold;")
        self.speedup.setWordWrap(True)  # one long line grew the dialog to 1444 px, off a 1600 px screen
        grid.addWidget(self.speedup, 4, 0, 1, 2)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        grid.addWidget(close, 5, 1)

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
        self.speeds[side].setText(result.summary() + ("\n" + drafters_line(self.drafters[side]) if side == "speculative" else ""))
        if len(self.results) == 2:
            standard = self.results["standard"].stats.generation_tps
            speculative = self.results["speculative"].stats.generation_tps
            ratio = speculative / standard if standard else 0.0
            stats = self.results["speculative"].stats
            how = (f"{stats.tokens_per_pass:.2f} tokens per pass, {stats.acceptance_rate:.0%} of {stats.drafted} drafted "
                   "accepted" if stats.drafted else "nothing drafted")
            self.speedup.setText(
                f"Standard {standard:.1f} tok/s (1 token per pass), speculative {speculative:.1f} tok/s ({how}): "
                f"{ratio:.2f}x " + ("faster" if ratio >= 1 else "(slower: speculation does not pay here)")
            )

    def fail(self, request_id: int, message: str) -> None:
        side = self.side_of(request_id)
        if side:
            self.speeds[side].setText(message)


def drafters_line(rounds: Counter) -> str:
    """Which drafters ran, in how many rounds; lookup here never drafts from saved answers to this question."""
    drafted = [(name, n) for name, n in rounds.most_common() if name != "none"]
    if not drafted:
        return "Nothing was drafted."
    parts = ", ".join(f"{name} in {n} round{'s' * (n != 1)}" for name, n in drafted)
    plain = f"; {rounds['none']} round{'s' * (rounds['none'] != 1)} drafted nothing" if rounds["none"] else ""
    lookup = " (lookup left out saved chats that asked this question)" if "lookup" in rounds else ""
    return f"Drafted by {parts}{plain}{lookup}."
