"""The side panel: what speculation is doing, live, in four tabs.

Live: two plots over the seconds of the current answer (tokens per second, acceptance rate: live_plots.py) and the numbers
behind them (tokens per target pass, drafted and accepted tokens, the last round's draft length, time to first
token, peak memory), with a legend of the token colours and the switch for rejected drafts. Rounds: every round
as a bar (round_timeline.py). Positions: acceptance by draft position (position_histogram.py). Cost: the cost
model fitted to this answer (cost_card.py). All of them take the same batches of engine events.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QSize, Signal
from PySide6.QtWidgets import QCheckBox, QFormLayout, QFrame, QHBoxLayout, QLabel, QTabWidget, QVBoxLayout, QWidget

from engine.conversations import StoredMessage
from engine.drafter_kinds import drafter_label
from engine.events import GenerationResult, GenerationStats, PolicyBelief, PrefillEvent, RoundEvent, TokenEvent, lossy_label
from engine.recent_rate import RecentRate
from engine.saved_rounds import ended_on_end_token, saved_rounds

from .cost_card import CostCard
from .live_plots import LivePlots
from .message_widget import FIRST_TOKEN_MEANING
from .page_scroll import PageScroll
from .palette import ORIGIN_LABELS, ghost_colour, origin_colour
from .position_histogram import PositionHistogram
from .quiet_text import make_quiet
from .round_timeline import RoundTimeline
from .streaming_answer import stopped_before_first_token
from .worker import MemoryReading

RATE_WINDOW_S = 3.0  # long enough to smooth out the bursts speculation emits tokens in
POLICY_UNITS = ("Why each drafter drafts as many tokens as it does, or none. A draft's cost is in target steps per draft "
                "token (one target step: the time the target takes to make one token without drafting), as on the "
                "Cost tab.")
PLOT_INTERVAL_S = 0.2  # plots show trends; redrawing them for every batch kept the GUI thread busy


def memory_text(gb: float) -> str:
    return f"{gb:.2f} GB" if gb >= 1 else f"{gb * 1000:.0f} MB"


class Legend(QWidget):
    """A chip per coloured origin, with its meaning, and one for the rejected drafts shown after corrections."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.chips: dict[str, QLabel] = {}
        for origin in ("accepted", "corrected", "bonus"):
            row = QHBoxLayout()
            self.chips[origin] = QLabel("  text  ")
            row.addWidget(self.chips[origin])
            row.addWidget(QLabel(ORIGIN_LABELS[origin]))
            row.addStretch()
            layout.addLayout(row)
        row = QHBoxLayout()
        self.ghost_chip = QLabel("<s>text</s>")
        row.addWidget(self.ghost_chip)
        self.show_rejected = QCheckBox(ORIGIN_LABELS["rejected"] + "s")
        self.show_rejected.setObjectName("showRejected")
        self.show_rejected.setToolTip("Show the draft tokens the target rejected, after their correction, dimmed and struck through")
        row.addWidget(self.show_rejected)
        row.addStretch()
        layout.addLayout(row)
        self._tint_chips()

    def _tint_chips(self) -> None:
        for origin, chip in self.chips.items():
            colour = origin_colour(origin, self.palette())  # every chip's origin is a tinted one
            chip.setStyleSheet(f"background: {colour.name() if colour else 'transparent'}; border-radius: 3px;")
        self.ghost_chip.setStyleSheet(f"color: {ghost_colour(self.palette()).name()}; padding: 0 6px;")

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        """Follow the system into light or dark mode."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._tint_chips()


class StatsPanel(QFrame):
    """Live statistics of the answer being generated, and the last one's when idle.

    Signals:
        show_rejected_changed(bool): the rejected-drafts switch was flipped.
    """

    show_rejected_changed = Signal(bool)

    def __init__(self, show_rejected: bool = True, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumWidth(300)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        title = QLabel("Speculation")
        title.setStyleSheet("font-weight: bold; font-size: 14px;")
        outer.addWidget(title)
        self.tabs = QTabWidget()
        outer.addWidget(self.tabs)
        live = QWidget()
        layout = QVBoxLayout(live)
        self.tabs.addTab(live, "Live")
        self.legend = Legend(self)
        self.legend.show_rejected.setChecked(show_rejected)
        self.legend.show_rejected.toggled.connect(self.show_rejected_changed)
        layout.addWidget(self.legend)

        self.plots = LivePlots()
        layout.addWidget(self.plots, 1)

        form = QFormLayout()
        self.values: dict[str, QLabel] = {}
        for key, label in [("mode", "Mode"), ("tps", "Tokens / s"), ("per_pass", "Tokens per pass"), ("drafted", "Drafted"),
                           ("accepted", "Accepted"), ("draft_k", "Last draft length"), ("ttft", "First token after"),
                           ("memory", "Peak memory"), ("prefill", "Prompt"), ("network", "Network"), ("ssd", "SSD"),
                           ("policy", "Policy")]:
            self.values[key] = QLabel("–")
            self.values[key].setObjectName(f"stat_{key}")
            self.values[key].setWordWrap(True)
            form.addRow(label, self.values[key])
        self.values["ssd"].setToolTip("Speculative speculative decoding: drafts made for the next round while the target "
                                      "verified this one. Ready: rounds whose outcome was guessed (a fan-out hit); unused: "
                                      "pre-drafted tokens for outcomes that did not happen; hidden: drafting time saved.")
        self.values["ttft"].setToolTip(FIRST_TOKEN_MEANING)
        self.values["network"].setToolTip("The target runs across Macs: the share of the rounds' time the head spent "
                                          "on the network (its message to the other Macs, the hops, waiting on them).")
        self.values["policy"].setToolTip(POLICY_UNITS)
        self._form = form
        numbers = QWidget()
        numbers.setLayout(form)
        self.numbers = Scrolling(numbers)
        layout.addWidget(self.numbers)
        self._build_round_tabs()
        self.reset("speculative")

    def _build_round_tabs(self) -> None:
        self.timeline = RoundTimeline()
        self.histogram = PositionHistogram()
        self.cost_card = CostCard()
        for widget, name, note in (
            (self.timeline, "Rounds", "One bar per round (target pass): draft time (the quieter blue) under verify time. Below it "
             "the round's tokens: accepted drafts, then its correction, bonus or plain token, then the drafts the "
             "correction threw away (hollow). With the target across Macs, the orange top of a bar is the network's part. "
             "Hover a bar for its numbers."),
            (self.histogram, "Positions", "Draft tokens verified (pale) and accepted (filled) at each position of a "
             "draft; above each bar, the acceptance there among drafts that got that far."),
            (self.cost_card, "Cost", ""),
        ):
            page = QWidget()
            page_layout = QVBoxLayout(page)
            page_layout.addWidget(widget)
            if note:
                label = QLabel(note)
                label.setWordWrap(True)
                make_quiet(label, "font-size: 11px;")
                page_layout.addWidget(label)
            page_layout.addStretch()
            self.tabs.addTab(PageScroll(page), name)  # scrolls down on a short screen: squeezed, its lines overlapped

    def reset(self, mode: str, draft_cost_on_gpu: float | None = None, lenience: float = 0.0) -> None:
        """A new answer starts (`draft_cost_on_gpu`: the draft's share of the weights, for the cost card;
        `lenience` above 0: lenient acceptance, which the Mode row calls lossy)."""
        self._start = time.perf_counter()
        self._rate = RecentRate(RATE_WINDOW_S)  # over the tokens so far
        self.showing: int | None = None  # the saved answer whose numbers are shown (None: a live one, or none)
        self.tokens = self.rounds = self.drafted = self.accepted = self.emitted = 0
        self.ssd = GenerationStats()  # only its SSD counts are used
        self.network_s = self.round_s = 0.0
        self._form.setRowVisible(self.values["network"], False)
        self._form.setRowVisible(self.values["ssd"], False)
        self._form.setRowVisible(self.values["policy"], False)
        self._first_token: float | None = None
        self._prompt_tokens = 0
        self._last_plot = 0.0
        self.plots.reset()
        for label in self.values.values():
            label.setText("–")
        self.values["mode"].setText(f"{mode}, {lossy_label(lenience)}" if lenience else mode)
        self.timeline.clear()
        self.histogram.clear_counts()
        self.cost_card.reset(mode, draft_cost_on_gpu)

    def add_events(self, events: list[object]) -> None:
        """Take a batch of engine events and redraw once."""
        now = time.perf_counter() - self._start
        rounds = [e for e in events if isinstance(e, RoundEvent)]
        self.timeline.add(rounds)
        self.histogram.add(rounds)
        self.cost_card.add(rounds)
        for event in events:
            if isinstance(event, TokenEvent):
                self.tokens += 1
                if self._first_token is None:
                    self._first_token = now
                    self.values["ttft"].setText(f"{now:.2f} s")
                    self.values["prefill"].setText(f"{self._prompt_tokens} tokens" if self._prompt_tokens else "–")
            elif isinstance(event, RoundEvent):
                self._count_round(event, now)
            elif isinstance(event, PrefillEvent):
                self._prompt_tokens = event.total
                by = " by the draft" if event.model == "draft" else ""  # one line in a narrow panel; the bubble says more
                self.values["prefill"].setText(f"{event.processed} of {event.total} tokens read{by}")
            elif isinstance(event, MemoryReading):
                self.values["memory"].setText(memory_text(event.peak_gb))
        self._rate.add(now, self.tokens)
        rate = self._rate.per_second()
        if rate is not None and self._first_token is not None:
            self.plots.add_rate(now, rate)
            self.values["tps"].setText(f"{rate:.1f}")
        if now - self._last_plot >= PLOT_INTERVAL_S:
            self._redraw_plots(now)
        self._show_counts()

    def _count_round(self, event: RoundEvent, now: float) -> None:
        """A round's drafts and tokens in the counts, and the acceptance so far in its plot at `now`."""
        self.rounds += 1
        self.emitted += event.emitted
        self.drafted += event.drafted
        self.accepted += event.accepted
        self.values["draft_k"].setText(f"{event.drafted} ({drafter_label(event.drafter)})")
        self._count_ssd(event)
        self._count_network(event)
        if self.drafted:
            self.plots.add_acceptance(now, 100.0 * self.accepted / self.drafted)

    def show_saved(self, answer: StoredMessage | None, mode: str) -> None:
        """A saved answer's rounds, when its chat is opened: the panel stood at "–" beside an answer it could show
        (with none, it is reset for the next answer, in `mode`). The plots run on the rounds' own times (drafting
        and verifying; the wait for the first token is not among them); what only the finished answer knew (its
        speed, memory, the prompt) is in the line under it."""
        rounds = saved_rounds(answer.trace) if answer is not None else []
        if answer is None or not rounds:
            self.reset(mode)
            return
        self.reset(("speculative" if any(r.drafted for r in rounds) else "standard") + " (saved answer)")
        self.showing = answer.id
        self.timeline.add(rounds)
        self.histogram.add(rounds)
        self.cost_card.add(rounds)
        spent = 0.0
        self._rate.add(spent, 0)
        for event in rounds:
            spent += event.draft_s + event.verify_s
            self._count_round(event, spent)
            self._rate.add(spent, self.emitted)
            if (rate := self._rate.per_second()) is not None:
                self.plots.add_rate(spent, rate)
        self.emitted += ended_on_end_token(answer, rounds)  # tokens per pass as the engine counts them (the line under it)
        self._redraw_plots(spent)
        self._show_counts()

    def _count_ssd(self, event: RoundEvent) -> None:
        """SSD's figures: drafts that were ready, pre-drafted tokens unused, drafting time hidden."""
        s = self.ssd
        s.count_ssd(event)
        if s.predrafted:
            self._form.setRowVisible(self.values["ssd"], True)
            ready = f"{s.fanout_hit_rate:.0%}" if s.ssd_checked else "–"
            self.values["ssd"].setText(f"{ready} of drafts ready · {s.predraft_wasted} of {s.predrafted} pre-drafted "
                                       f"tokens unused · {s.hidden_draft_s:.2f} s drafting hidden")

    def _count_network(self, event: RoundEvent) -> None:
        """The network's share of the rounds so far, shown once a round spent time on it (the target across Macs)."""
        self.round_s += event.draft_s + event.verify_s
        self.network_s += event.network_s or 0.0
        if self.network_s and self.round_s:
            self._show_network(min(self.network_s / self.round_s, 1.0), self.network_s)

    def _show_network(self, share: float, seconds: float) -> None:
        self._form.setRowVisible(self.values["network"], True)
        self.values["network"].setText(f"{share:.0%} of the time ({seconds:.2f} s), across Macs")

    def _redraw_plots(self, now: float) -> None:
        self._last_plot = now
        self.plots.redraw()
        self.histogram.redraw()
        self.cost_card.redraw()

    def _show_counts(self) -> None:
        if not self.rounds:  # the message is still being read: nothing to say of drafting yet, not "nothing drafted"
            return
        self.values["drafted"].setText(str(self.drafted))
        self.values["accepted"].setText(f"{self.accepted} ({self.accepted / self.drafted:.0%})" if self.drafted else "0")
        # Tokens per target pass says what drafting gained; with nothing drafted there is nothing to say (a
        # last pass that ends on EOS would make it read below 1).
        if self.drafted:
            # Each round's own count: a batch may hold a round's tokens without its RoundEvent yet.
            self.values["per_pass"].setText(f"{self.emitted / self.rounds:.2f}")
        else:
            self.values["per_pass"].setText("– (nothing drafted)")

    def finish(self, result: GenerationResult, message_id: int | None = None) -> None:
        """Show the final numbers of an answer (the engine's own totals), saved as `message_id`; of one stopped before
        its first token, only how far its prompt's reading got (its zero speed and first token "after 0.00 s" said
        nothing true)."""
        s = result.stats
        self.showing = message_id
        self._redraw_plots(time.perf_counter() - self._start)
        if stopped_before_first_token(result):
            self.values["memory"].setText(memory_text(s.peak_memory_gb))
            return
        self.tokens, self.rounds, self.drafted, self.accepted = s.generated_tokens, s.rounds, s.drafted, s.accepted
        self.emitted = s.generated_tokens + s.ended_on_eos  # the engine's own count (tokens_per_pass)
        self._show_counts()
        self.values["tps"].setText(f"{s.generation_tps:.1f}")
        self.values["ttft"].setText(f"{s.ttft_s:.2f} s")
        self.values["memory"].setText(memory_text(s.peak_memory_gb))
        cached = f", {s.cached_prompt_tokens} cached" if s.cached_prompt_tokens else ""
        self.values["prefill"].setText(f"{s.prompt_tokens} tokens{cached}")
        self._show_policy(s.policy)
        if s.network_share:
            self._show_network(s.network_share, s.network_s or 0.0)

    def _show_policy(self, beliefs: list[PolicyBelief]) -> None:
        """The adaptive policy's reason per drafter, when it last drafted, and its predictions in the tooltip."""
        self._form.setRowVisible(self.values["policy"], bool(beliefs))
        self.values["policy"].setText("\n".join(policy_line(b) for b in beliefs))
        self.numbers.updateGeometry()  # as tall as its new lines, if the window has room
        self.values["policy"].setToolTip(POLICY_UNITS + "\n\n" + "\n".join(
            f"{drafter_label(b.drafter)}, tokens/s predicted drafting 0, 1, 2… tokens a round: "
            + ", ".join(f"{tps:.1f}" for tps in b.predicted_tps) for b in beliefs if b.predicted_tps))


class Scrolling(PageScroll):
    """The numbers under the plots: as tall as they are while the window has room (the plots give way first), and
    scrolling down when it is too short for them (the Policy row's lines were cut off)."""

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """Up to half the tab's height: the plots keep the other half."""
        hint, tab = super().sizeHint(), self.parentWidget()
        return QSize(hint.width(), min(hint.height(), tab.height() // 2) if tab is not None else hint.height())


def policy_line(belief: PolicyBelief) -> str:
    """'draft model: K = 0: ... (last drafted 40 rounds ago)': the reason, and how long ago it last drafted."""
    since = ""
    if belief.rounds_since_draft is not None and belief.chosen_k == 0:
        since = f" (last drafted {belief.rounds_since_draft} rounds ago)" if belief.rounds_since_draft else " (drafted last round)"
    return f"{drafter_label(belief.drafter)}: {belief.reason}{since}"
