"""The status bar's one line about loading a pair: what loads, the stage it is at, a bar, and a Cancel button.

Importing a 7B GGUF takes minutes; the user sees how far it is and can stop it. Cancelling ends the load at its
next step and keeps nothing of an import (the engine writes under a temporary name); the pair loaded before stays
in use. Every message about a load is said here, in one place, so the status bar never shows "Loading…" beside
"Importing…".
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QSizePolicy, QStatusBar, QWidget

from engine.recent_rate import RecentRate
from engine.time_left import duration_text, seconds_left

from .elided_label import ElidedLabel
from .session import ChatSession
from .worker import PairInfo

# How far back the time left's rate looks: long enough to smooth the weights' uneven slices (the embedding's
# quantization, a shard written), short enough to follow the machine getting busier.
RATE_WINDOW_S = 5.0
# A stage's first seconds give no time left: its first reports can arrive at once (the GUI thread busy), which
# would read as a rate many times the real one ("about 1 s left" at 8%).
RATE_AFTER_S = 2.0


class LoadStatus(QWidget):
    """Shown in the status bar while a pair loads; the outcome is the status bar's message when it ends."""

    def __init__(self, session: ChatSession, status_bar: QStatusBar) -> None:
        super().__init__()
        self.session = session
        self.status_bar = status_bar
        # Cut in the middle at a narrow width: the stage's first words and the file's name with the time left stay.
        self.label = ElidedLabel(elide=Qt.TextElideMode.ElideMiddle)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setFixedWidth(160)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)  # not the bar's spare width
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in (self.label, self.bar, self.cancel_button):
            layout.addWidget(widget)
        status_bar.addPermanentWidget(self)
        self.hide()
        session.pair_loading.connect(self.show_loading)
        session.load_progress.connect(self.show_progress)
        session.pair_loaded.connect(self.show_loaded)
        session.pair_failed.connect(self.show_failed)
        session.load_cancelled.connect(self.show_cancelled)
        self._rate_stage, self._rate, self._rate_since = "", RecentRate(RATE_WINDOW_S), 0.0
        self._ticker = QTimer(self)  # a stage that cannot say how far it is says how long it has run, each second
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._tick)

    def show_loading(self, message: str) -> None:
        """From the click on, not from the first stage's report: a load's first seconds are not silent."""
        self.show_progress(message, 0, 0)

    def show_progress(self, stage: str, done: int, total: int) -> None:
        """A stage with how far it is (total 0: a stage that cannot say, shown as a busy bar); once Cancel is
        clicked the line says so until the load ends, whatever stage reports after it."""
        self.status_bar.clearMessage()  # the one line about the load: not beside an older message
        cancelling = self.session.cancelling_load
        self.label.setText("Cancelling…" if cancelling else stage + self._time_left(stage, done, total))
        self.bar.setRange(0, 1000 if total else 0)
        self.bar.setValue(1000 * done // total if total else 0)
        self.cancel_button.setEnabled(not cancelling)
        if total or cancelling:
            self._ticker.stop()
        elif not self._ticker.isActive():
            self._ticker.start()
        self.show()

    def _tick(self) -> None:
        """A busy stage's line with its time so far ("Converting the tokenizer of x.gguf, 25 s so far": Gemma 3's
        takes 20-70 s), from its second second on: still at work, not stuck."""
        elapsed = time.monotonic() - self._rate_since
        if not self.session.cancelling_load and elapsed >= RATE_AFTER_S:
            self.label.setText(f"{self._rate_stage}, {duration_text(elapsed)} so far")

    def _time_left(self, stage: str, done: int, total: int) -> str:
        """", about 12 s left" for a stage that says how far it is, once it has gone on long enough to give a rate
        (its own: the rate starts afresh with each stage)."""
        now = time.monotonic()
        if stage != self._rate_stage:
            self._rate_stage, self._rate, self._rate_since = stage, RecentRate(RATE_WINDOW_S), now
        if not total:
            return ""
        self._rate.add(now, done)
        left = seconds_left(done, total, self._rate.per_second())
        if left is None or done >= total or now - self._rate_since < RATE_AFTER_S:
            return ""
        return f", about {duration_text(max(left, 1.0))} left"

    def show_loaded(self, info: PairInfo) -> None:
        warnings = ("Warnings: " + "; ".join(info.warnings)) if info.warnings else ""
        parts = (f"Loaded {self.session.describe_pair()}.", info.layout, self.session.drafter_note, warnings)
        self._end(" ".join(filter(None, parts)), 10000)  # drafter_note: a drafter pinned for the pair set aside

    def show_failed(self, message: str) -> None:
        self._end("Could not load the models." + (" The models loaded before are still in use." if self.session.pair else ""), 10000)

    def show_cancelled(self, message: str) -> None:
        self._end(message, 0)

    def _end(self, message: str, timeout_ms: int) -> None:
        self._ticker.stop()
        self.hide()
        self.status_bar.showMessage(message, timeout_ms)

    def cancel(self) -> None:
        self.session.cancel_load()
        if self.session.cancelling_load:
            self._ticker.stop()
            self.cancel_button.setEnabled(False)
            self.label.setText("Cancelling…")
