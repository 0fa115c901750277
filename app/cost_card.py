"""The cost-model card: why speculation wins or loses on this machine, and what it would do on an Apple GPU.

It fits the cost model (docs/design.md) to the answer's rounds (engine/decoding/policy/cost_model.py): the measured acceptance
a, the draft cost c and the verify cost v(K) in target steps. A plot sets the tokens per second the model
predicts for each K (a line) against what the rounds of each K achieved (dots). Below, the same acceptance
with a memory-bound Apple GPU's costs, labelled as the prediction it is; last, each drafter that reads the target's
hidden states on an Apple GPU, from its draft cost measured here and the acceptance its authors published
(engine/decoding/policy/apple_prediction.py), labelled as such.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from engine.decoding.policy.apple_prediction import LABEL, Prediction, costs_in_answer, predictions
from engine.decoding.policy.cost_model import APPLE_GPU_VERIFY_SLOPE, CostModel, fit
from engine.drafter_kinds import drafter_label
from engine.events import RoundEvent

from .quiet_text import make_quiet

WAITING = ("The model needs drafted rounds with their own timings (the policy times a drafter's first three "
           "rounds, then one in eight): it appears after a few rounds of a speculative answer.")
STANDARD = "Standard decoding drafts nothing: there is no speculation to model. Turn Speculative on."


def describe_here(model: CostModel) -> str:
    """The measured half of the card."""
    best_k = max(range(0, max(model.measured_tps, default=0) + 5), key=model.predicted_tps)
    return (
        f"<b>Measured here</b> ({model.rounds_used} timed rounds)<br>"
        f"acceptance a = {model.acceptance:.0%} of draft tokens reached ({model.verified_acceptance:.0%} of all verified)<br>"
        f"draft cost c = {model.draft_cost:.2f} target steps per token{drafter_mix(model)}<br>"
        f"verify v(K) = 1 + {model.verify_cost(1) - 1:.2f}·K target steps<br>"
        f"target step {model.step_s * 1000:.1f} ms{'' if model.step_measured else ' (estimated: no plain round timed)'}<br>"
        f"best K here: {best_k} ({model.predicted_tps(best_k):.1f} tok/s predicted"
        f"{', standard decoding' if best_k == 0 else ''})"
    )


def drafter_mix(model: CostModel) -> str:
    """With several drafters: each one's cost and share of the draft tokens (c is their weighted mean), each by the name
    the rest of the window gives it ("DFlash drafter", not the registry key "dflash")."""
    if len(model.drafter_shares) < 2:
        return ""
    parts = [f"{drafter_label(d)} {model.drafter_token_s.get(d, 0.0) / model.step_s:.2f} for {share:.0%} of draft tokens"
             for d, share in sorted(model.drafter_shares.items(), key=lambda item: -item[1])]
    return " (" + "; ".join(parts) + ")"


def describe_apple_gpu(model: CostModel, draft_cost: float) -> str:
    """The predicted half: the same acceptance, a memory-bound GPU's costs. A draft model's step costs `draft_cost`
    there (its share of the weights), lookup's drafts are free, and a drafter that reads the target's hidden states
    (MTP, EAGLE-3, DFlash, DSpark) costs what it measured in this answer: it has no weights share of its own to go
    by."""
    costs = {d: draft_cost if d == "model" else 0.0 if d == "lookup" else model.drafter_token_s.get(d, 0.0) / model.step_s
             for d in model.drafter_shares}
    k, speedup = model.apple_gpu(sum(share * costs[d] for d, share in model.drafter_shares.items()))
    verdict = f"best K = {k}, {speedup:.2f}x standard decoding" if k else "speculation would not pay (K = 0)"
    return (
        "<b>Prediction for an Apple GPU</b> (not a measurement)<br>"
        f"verify reads the weights once: v(K) = 1 + {APPLE_GPU_VERIFY_SLOPE}·K; {draft_costs(model, costs)}.<br>"
        f"With a = {model.acceptance:.0%}: {verdict}."
    )


def draft_costs(model: CostModel, costs: dict[str, float]) -> str:
    """Where each drafter's cost on the GPU comes from, for the drafters of this answer."""
    def one(drafter: str) -> str:
        if drafter == "lookup":
            return "lookup drafts for free"
        if drafter == "model":
            return f"a draft model step costs its weights' share, {costs[drafter]:.2f}"
        return f"{drafter_label(drafter)} tokens cost {costs[drafter]:.2f} each, as measured in this answer"

    shares = sorted(model.drafter_shares.items(), key=lambda item: -item[1])
    if len(shares) == 1:
        return one(shares[0][0])
    return "; ".join(f"{one(d)} ({share:.0%} of draft tokens)" for d, share in shares)


def describe_published(rows: list[Prediction]) -> str:
    """Each drafter's predicted speedup on an Apple GPU, with the acceptance and the cost it comes from."""
    lines = [f"<b>Each drafter on an Apple GPU</b> ({LABEL})<br>"]
    for row in rows:
        p = row.published
        per_token = row.c * p.passes / p.k  # a block drafter's c is per pass: said per draft token, as above
        lines.append(f"{drafter_label(row.drafter)}: <b>{row.speedup:.2f}x</b> (published τ {p.tokens_per_verify:g} at K = "
                     f"{p.k}; c = {per_token:.2f} target steps per token from "
                     f"{'this answer' if row.measured_here else 'the benchmark'})<br>")
    return "".join(lines)


def published_sources(rows: list[Prediction]) -> str:
    """The tooltip: where each acceptance length was published and what each c was measured on."""
    return "\n".join(f"{drafter_label(r.drafter)}: τ from {r.published.setting} ({r.published.source}); "
                     f"c (its cost, measured per drafter pass) from {r.cost_setting}" for r in rows)


class CostCard(QWidget):
    """The fitted model as text and a predicted-against-measured plot.

    Attributes:
        model: the last fit (None until one is possible).
        draft_cost_on_gpu: a draft step's cost in target steps on an Apple GPU (the draft's share of the weights).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rounds: list[RoundEvent] = []
        self.model: CostModel | None = None
        self.draft_cost_on_gpu = 0.0
        self.mode = "speculative"
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.plot = pg.PlotWidget(enableMenu=False)  # no context menu, none built (an eighth of a window's start)
        self.plot.setMinimumHeight(150)
        self.plot.setMaximumHeight(260)  # what the card says under it stays in view: a plot asks for all the height there is
        self.plot.setMouseEnabled(False, False)
        self.plot.hideButtons()
        self.plot.setLabel("bottom", "K (draft length)")
        self.plot.setLabel("left", "tokens / s")
        for axis in ("left", "bottom"):  # no "(x0.001)" added to the label, which the narrow card cut off
            self.plot.getAxis(axis).enableAutoSIPrefix(False)
        self.predicted = self.plot.plot(pen=pg.mkPen("#4C78A8", width=2), name="predicted")
        self.measured = self.plot.plot(pen=None, symbol="o", symbolSize=7, symbolBrush="#E45756", name="measured")
        layout.addWidget(self.plot)
        self.key = QLabel("line: predicted by the model · dots: measured in this answer's rounds of that K")
        self.key.setWordWrap(True)
        make_quiet(self.key, "font-size: 11px;")
        layout.addWidget(self.key)
        self.here = QLabel()
        self.gpu = QLabel()
        for label in (self.here, self.gpu):
            label.setWordWrap(True)
            layout.addWidget(label)
        self.gpu.setObjectName("applePrediction")
        self.published = QLabel()
        self.published.setWordWrap(True)
        self.published.setObjectName("publishedPrediction")
        layout.addWidget(self.published)
        layout.addStretch()
        self._colour_axes()
        self.reset("speculative")

    def reset(self, mode: str, draft_cost_on_gpu: float | None = None) -> None:
        self.rounds, self.model, self.mode = [], None, mode
        if draft_cost_on_gpu is not None:
            self.draft_cost_on_gpu = draft_cost_on_gpu
        self.redraw()

    def add(self, rounds: list[RoundEvent]) -> None:
        self.rounds.extend(rounds)

    def redraw(self) -> None:
        self.model = fit(self.rounds)
        self._show_published()
        for part in (self.plot, self.key):  # no empty axes from 0 to 1 before there is anything to plot
            part.setVisible(self.model is not None)
        if self.model is None:
            self.predicted.setData([], [])
            self.measured.setData([], [])
            self.here.setText(STANDARD if self.mode == "standard" else WAITING)
            self.gpu.setText("")
            return
        ks = list(range(0, max(max(self.model.measured_tps, default=0), 8) + 1))
        self.predicted.setData(ks, [self.model.predicted_tps(k) for k in ks])
        measured = self.model.measured_tps
        self.measured.setData(list(measured), list(measured.values()))
        self.here.setText(describe_here(self.model))
        self.gpu.setText(describe_apple_gpu(self.model, self.draft_cost_on_gpu))

    def _show_published(self) -> None:
        """Each drafter's Apple prediction, with the draft costs this answer measured where it drafted."""
        rows = predictions(costs_in_answer(self.model, self.rounds) if self.model else None)
        self.published.setText(describe_published(rows))
        self.published.setToolTip(published_sources(rows))

    def _colour_axes(self) -> None:
        text = self.palette().text().color()
        for axis in ("left", "bottom"):
            self.plot.getAxis(axis).setPen(text)
            self.plot.getAxis(axis).setTextPen(text)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "plot"):
            self._colour_axes()
