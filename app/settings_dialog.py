"""The settings a user can change: draft length, adaptive speculation, sampling, length, system prompt, and whether
the target runs across Macs (an mlx.launch hostfile). Which drafter drafts is not here but the toolbar's Drafter
choice (`drafter_choice.py`); SSD and the history switch follow it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.distributed.hostfile import read_hostfile
from engine.drafter_kinds import drafter_label
from engine.errors import DistributedError, InvalidParameterError
from engine.params import RANGES, GenerationParams

from .file_dialogs import open_file
from .mcp_servers import McpServers
from .mcp_settings import McpSettings
from .page_scroll import PageScroll
from .quiet_text import make_quiet
from .screen_fit import fitted, screen_room

KV_CACHE = [("Full precision", None), ("8-bit (half the memory)", 8), ("4-bit (a quarter)", 4)]
SSD_MEANING = ("Speculative speculative decoding: drafts for the likely outcomes of each verify are made during it; a "
               "guessed outcome starts the next round with its draft ready. Adaptive keeps it only where it measures "
               "faster. Exact: answers are the target's either way.")
UNBOUNDED = 1_000_000  # a spin box's top where the engine sets no limit
ERROR_RED = "#b00020"


def ssd_reason(drafter: str) -> str:
    """Why SSD does not apply to the drafter chosen in the toolbar ("" when it does): it drafts ahead with a draft model,
    and Automatic asks each round's drafter for its draft after the verdict."""
    if drafter in ("model", "model+lookup"):
        return ""
    if drafter == "auto":
        return "SSD drafts ahead with a draft model chosen as the Drafter: Automatic asks each round's drafter after the verdict."
    if drafter == "lookup":
        return "SSD drafts ahead with a draft model: lookup drafts nothing ahead."
    return f"SSD drafts ahead with a draft model: the Drafter chosen is the {drafter_label(drafter)}."


def note(text: str) -> QLabel:
    """A quiet line under a setting: why it does not apply, or what stands in for it."""
    label = QLabel(text)
    label.setWordWrap(True)
    make_quiet(label)
    return label


def whole_number_box(name: str, value: int) -> QSpinBox:
    """A spin box for a whole-number setting, limited to the range the engine validates (params.RANGES)."""
    low, high = RANGES[name]
    return QSpinBox(minimum=low, maximum=UNBOUNDED if high is None else high, value=value)


class AcrossMacsField(QWidget):
    """"Run the target across Macs": a switch and the mlx.launch hostfile that names the Macs (this one first).

    Args:
        hosts: the hostfile in use ("": this Mac alone).
        hostfile: the hostfile last chosen, shown while the switch is off (a failed load switched it off).

    Attributes:
        note: what running across Macs needs; error: what is wrong with the hostfile, gone once the hostfile or
            the switch changes.
    """

    def __init__(self, hosts: str, hostfile: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.switch = QCheckBox("Run the target across Macs…")
        self.switch.setChecked(bool(hosts))
        self.path = QLineEdit(hosts or hostfile)
        self.path.setPlaceholderText("mlx.launch hostfile (hosts.json): this Mac first")
        self.choose = QPushButton("Choose…")
        self.choose.clicked.connect(self._choose)
        row = QHBoxLayout()
        row.addWidget(self.path, 1)
        row.addWidget(self.choose)
        self.note = QLabel("For a target too big for this Mac: its layers are split across the Macs of the hostfile by "
                           "their free memory; this Mac drafts and runs the last ones. Each Mac needs SpecChat and the "
                           "model at the same paths, and ssh from this one without a password.")
        self.note.setWordWrap(True)
        make_quiet(self.note, "font-size: 11px;")
        self.error = QLabel()
        self.error.setStyleSheet(f"color: {ERROR_RED};")
        self.error.setWordWrap(True)
        layout.addWidget(self.switch)
        layout.addLayout(row)
        self.switch.toggled.connect(self._enable)
        self._enable(self.switch.isChecked())
        self.switch.toggled.connect(self.error.clear)
        self.path.textChanged.connect(self.error.clear)

    def add_to(self, form: QFormLayout) -> None:
        """The field's rows: itself, then its note and its error each in a row of their own (wrapped in the field,
        they were cut off)."""
        form.addRow("Target", self)
        form.addRow("", self.note)
        form.addRow("", self.error)

    def _enable(self, on: bool) -> None:
        self.path.setEnabled(on)
        self.choose.setEnabled(on)

    def _choose(self) -> None:
        path = open_file(self, "settings files", "The Macs to run the target across", "Hostfile (*.json)")
        if path:
            self.path.setText(path)

    def hosts(self) -> str:
        """The hostfile chosen ("" when the target runs on this Mac alone)."""
        return self.path.text().strip() if self.switch.isChecked() else ""

    def check(self) -> bool:
        """Whether the hostfile can drive a ring; when not, the error line says why."""
        try:
            if self.switch.isChecked() and not self.hosts():
                raise DistributedError("Choose the hostfile that names the Macs (Choose…), or switch running across Macs off.")
            if self.hosts():
                read_hostfile(Path(self.hosts()))
        except DistributedError as e:
            self.error.setText(str(e))
            return False
        return True


class SettingsDialog(QDialog):
    """Edits GenerationParams and the system prompt; `params()` is valid once the dialog is accepted."""

    def __init__(self, params: GenerationParams, system_prompt: str, parent: QWidget | None = None,
                 can_switch_thinking: bool = False, hosts: str = "", hostfile: str = "",
                 mcp: McpServers | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self._base = params
        page = QWidget()
        self.form = form = QFormLayout(page)
        self.num_draft = whole_number_box("num_draft", params.num_draft)
        self.adaptive = QCheckBox("Adaptive: choose each round's draft length (0 when speculation loses)")
        self.adaptive.setChecked(params.adaptive)
        self.max_draft = whole_number_box("max_draft", params.max_draft)
        self._build_sampling_fields(params)
        self._build_speculation_extras(params)
        self.system_prompt = QPlainTextEdit(system_prompt)
        self.system_prompt.setPlaceholderText("Optional instructions sent before every conversation")
        self.system_prompt.setMaximumHeight(90)
        form.addRow("Draft length (K)", self.num_draft)
        form.addRow("", self.adaptive)
        form.addRow("Longest adaptive draft", self.max_draft)
        form.addRow("", self.history)
        form.addRow("", self.ssd)
        form.addRow("SSD fan-out", self.fanout)
        self.ssd_note = note("")
        form.addRow("", self.ssd_note)
        form.addRow("Temperature (0 = greedy)", self.temperature)
        form.addRow("Top-p", self.top_p)
        form.addRow("Top-k (0 = off)", self.top_k)
        form.addRow("Min-p (0 = off)", self.min_p)
        form.addRow("Repetition penalty (1 = off)", self.repetition_penalty)
        form.addRow("Max tokens", self.max_tokens)
        form.addRow("KV cache", self.kv_bits)
        form.addRow("Lenience (0 = exact, above: LOSSY)", self.lenience)
        form.addRow("System prompt", self.system_prompt)
        self.think = QCheckBox("Thinking models think before answering (each chat can switch it)")
        self.think.setChecked(params.think)
        self.think.setToolTip("The default of the Think switch beside the message box: off, a thinking model is asked "
                              "to answer at once (its template's no-think prompt). Only for models that can switch.")
        self.think.setVisible(can_switch_thinking)
        form.addRow("", self.think)
        self.across_macs = AcrossMacsField(hosts, hostfile)
        self.across_macs.add_to(form)
        self.mcp = McpSettings(mcp, self, form) if mcp is not None else None
        self.error = QLabel()
        self.error.setStyleSheet(f"color: {ERROR_RED};")
        self.error.setWordWrap(True)
        self._lay_out(page)
        self.adaptive.toggled.connect(self._adaptive_toggled)
        self._adaptive_toggled(params.adaptive)
        self._follow_drafter(params)
        self.fit_to(screen_room(self.parentWidget() or self).height())

    def _lay_out(self, page: QWidget) -> None:
        """The settings scroll above the error line and OK/Cancel, which stay in view: with the MCP section they are
        about 740 px tall, and on a 900x600 screen OK and Cancel were below its bottom edge."""
        self.page_scroll = PageScroll(page)
        self.page_scroll.setMinimumWidth(page.sizeHint().width() + self.page_scroll.verticalScrollBar().sizeHint().width())
        layout = QVBoxLayout(self)
        layout.addWidget(self.page_scroll, 1)
        layout.addWidget(self.error)
        self.buttons = self._buttons()
        layout.addWidget(self.buttons)

    def fit_to(self, screen_height: int) -> None:
        """As tall as the settings where the screen has room (no scroll bar then), else as tall as the screen."""
        self.page_scroll.updateGeometry()  # the page's hint changed as its rows were filled in
        hint = self.sizeHint()
        self.resize(fitted(hint, QSize(hint.width(), screen_height)))

    def _buttons(self) -> QDialogButtonBox:
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        return buttons

    def _build_sampling_fields(self, params: GenerationParams) -> None:
        """The warp, the length limit, the repetition penalty and the KV cache's precision."""
        self.temperature = QDoubleSpinBox(minimum=0.0, maximum=2.0, singleStep=0.05, decimals=2, value=params.temperature)
        self.top_p = QDoubleSpinBox(minimum=0.01, maximum=1.0, singleStep=0.05, decimals=2, value=params.top_p)
        self.top_k = whole_number_box("top_k", params.top_k)
        self.min_p = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.01, decimals=2, value=params.min_p)
        self.max_tokens = whole_number_box("max_tokens", params.max_tokens)
        self.repetition_penalty = QDoubleSpinBox(
            minimum=0.5, maximum=3.0, singleStep=0.05, decimals=2, value=params.repetition_penalty
        )
        self.kv_bits = QComboBox()
        for label, value in KV_CACHE:
            self.kv_bits.addItem(label, value)
        self.kv_bits.setCurrentIndex([v for _, v in KV_CACHE].index(params.kv_bits))
        self.kv_bits.setToolTip("Store the attention cache in fewer bits: longer chats in less memory, slightly "
                                "different answers. Sliding-window layers stay in full precision.")

    def _build_speculation_extras(self, params: GenerationParams) -> None:
        """SSD (drafting ahead) with its fan-out, and lenient acceptance."""
        self.ssd = QCheckBox("SSD: the draft model drafts the next round while the target verifies")
        self.ssd.setChecked(params.ssd)
        self.ssd.setToolTip(SSD_MEANING)
        self.fanout = whole_number_box("fanout", params.fanout)
        self.fanout.setToolTip("Outcomes pre-drafted per likely accepted length")
        self.lenience = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2, value=params.lenience)
        self.lenience.setToolTip("Lenient acceptance: accept a draft token with probability min(1, p / ((1 - δ) q)). "
                                 "0 is exact; above 0 more drafts survive and answers are LOSSY: no longer what the "
                                 "target alone would write.")
        self.ssd.toggled.connect(self.fanout.setEnabled)
        self.fanout.setEnabled(params.ssd)
        self.history = QCheckBox("Lookup also drafts from your saved chats")
        self.history.setChecked(params.history)
        self.history.setToolTip("Answers that repeat an earlier chat (the same code again, a re-asked question) are "
                                "drafted from it. Off: lookup drafts from this chat only. Exact either way.")

    def _adaptive_toggled(self, adaptive: bool) -> None:
        """Adaptive rounds choose their own length up to the longest draft; a fixed K applies otherwise."""
        self.max_draft.setEnabled(adaptive)
        self.num_draft.setEnabled(not adaptive)

    def _follow_drafter(self, params: GenerationParams) -> None:
        """The history switch only matters when lookup drafts, SSD only with a draft model chosen as the Drafter
        (disabled, with the reason on hover and below, otherwise)."""
        self.history.setEnabled(params.looks_up)
        reason = ssd_reason(params.drafter)
        self.ssd.setEnabled(not reason)
        self.fanout.setEnabled(not reason and self.ssd.isChecked())
        self.ssd.setToolTip(reason or SSD_MEANING)
        self.ssd_note.setText(reason)
        self.ssd_note.setVisible(bool(reason))

    def params(self) -> GenerationParams:
        return self._base.replace(
            num_draft=self.num_draft.value(),
            adaptive=self.adaptive.isChecked(),
            max_draft=self.max_draft.value(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            min_p=self.min_p.value(),
            max_tokens=self.max_tokens.value(),
            repetition_penalty=self.repetition_penalty.value(),
            kv_bits=self.kv_bits.currentData(),
            lenience=round(self.lenience.value(), 2),
            ssd=self.ssd.isChecked(),
            fanout=self.fanout.value(),
            history=self.history.isChecked(),
            think=self.think.isChecked(),
        )

    def accept(self) -> None:
        try:
            self.params()
        except InvalidParameterError as e:
            self.error.setText(str(e))
            return
        if self.across_macs.check():
            super().accept()
        else:
            self.page_scroll.ensureWidgetVisible(self.across_macs.error)  # said where the field is, maybe scrolled away
