"""The picker's "On this computer" tab: models on disk as targets, and what to load beside one: a draft model that
shares its tokenizer, a drafter folder made for it, or nothing. Which drafter drafts is chosen in the toolbar
(`drafter_choice.py`), among those the loaded pair has; lookup needs no model and is always among them.

Models come from the HF cache, LM Studio's folder and the folders or GGUF files the user opened; one that is
not a usable model is refused when opened, and one damaged since is listed as such, to be removed. Tokenizer
checks run on the engine worker; for a chosen target only compatible drafts are offered, the others listed
with the reason.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine.drafter_kinds import drafter_label
from engine.errors import SpecChatError
from engine.models.base_model import BASE_MODEL_NOTE
from engine.models.draft_choice import built_in_drafters, drafts_with
from engine.models.memory import Fit, check_fit, estimate_memory_gb, folder_size_gb
from engine.models.model_store import LocalModel, all_local_models, delete_cached_model, forget_model, remember_model
from engine.models.vision import SEES_IMAGES

from .file_dialogs import open_file, open_folder
from .worker import DraftVerdict

NO_DRAFT = "No draft model"
TARGET_ITSELF = "the target itself (a draft must be a smaller, faster model)"
SOURCES = {"hf-cache": "downloaded", "lm-studio": "LM Studio", "opened": "opened"}


def model_label(name: str) -> str:
    """A hub repo id as it is; a folder or file by its name and the folder it is in."""
    path = Path(name)
    if not path.is_absolute():
        return name
    return f"{path.name} — {path.parent}"


def confirm_fit(parent: QWidget, fit: Fit) -> bool:
    """True when the models fit, or the user wants them loaded anyway."""
    if fit.fits:
        return True
    answer = QMessageBox.warning(
        parent,
        "These models may not fit",
        fit.message() + "\n\nLoad them anyway?",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.No,
    )
    return answer == QMessageBox.StandardButton.Yes


class LocalModelsTab(QWidget):
    """Pick a target on disk and one of its compatible drafts.

    Signals:
        pair_chosen(str, str): the target and draft to load ("" for no draft).
        drafts_check_requested(str, list): a target and candidate drafts, for the engine worker.
        models_changed(): a model was deleted from disk.
        shown(): the tab wants to be the one shown (a folder or file was opened).
    """

    pair_chosen = Signal(str, str)
    drafts_check_requested = Signal(str, list)
    models_changed = Signal()
    shown = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.local: list[LocalModel] = []
        self.in_use = ("", "")  # the loaded pair's target and draft, as listed here: preselected
        self._verdicts: list[DraftVerdict] = []  # the engine worker's answer for the selected target
        self._checked = ""  # how many drafts the worker has checked, said: the line above an import's stage
        self._build()

    def _build(self) -> None:
        layout = QHBoxLayout(self)
        left = QVBoxLayout()
        left.addWidget(QLabel("Target model"))
        self.targets = QListWidget()
        self.targets.setWordWrap(True)  # a row's end ("base model: …") was cut off, seen only on hover
        self.targets.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.targets.currentItemChanged.connect(self._target_changed)
        left.addWidget(self.targets)
        self.target_note = QLabel()  # what is wrong with a target: beside the target list, not under the draft's
        self.target_note.setWordWrap(True)
        left.addWidget(self.target_note)
        opens = QHBoxLayout()
        open_folder = QPushButton("Open folder…")
        open_folder.clicked.connect(self.open_folder)
        open_gguf = QPushButton("Open GGUF file…")
        open_gguf.clicked.connect(self.open_gguf)
        opens.addWidget(open_folder)
        opens.addWidget(open_gguf)
        left.addLayout(opens)
        layout.addLayout(left, 3)

        right = QVBoxLayout()
        loaded_beside = QLabel("Draft (loaded beside the target: a model with its tokenizer, or a drafter made for it)")
        loaded_beside.setWordWrap(True)
        right.addWidget(loaded_beside)
        self.drafts = QComboBox()
        right.addWidget(self.drafts)
        self.draft_note = QLabel()
        self.draft_note.setWordWrap(True)
        right.addWidget(self.draft_note)
        right.addWidget(QLabel("Not offered"))
        self.left_out = QListWidget()
        self.left_out.setWordWrap(True)
        self.left_out.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        right.addWidget(self.left_out)
        local_buttons = QHBoxLayout()
        self.forget_button = QPushButton("Remove from list")
        self.forget_button.setToolTip("Stop listing this opened folder or file (nothing is deleted from disk)")
        self.forget_button.clicked.connect(self.forget_selected)
        local_buttons.addWidget(self.forget_button)
        self.delete_button = QPushButton("Delete from disk…")
        self.delete_button.setToolTip("Remove the selected downloaded model from the Hugging Face cache")
        self.delete_button.clicked.connect(self.delete_selected)
        local_buttons.addWidget(self.delete_button)
        self.use_local_button = QPushButton("Use this pair")
        self.use_local_button.clicked.connect(self.use_local)
        local_buttons.addWidget(self.use_local_button)
        right.addLayout(local_buttons)
        layout.addLayout(right, 4)

    def refresh(self, in_use: tuple[str, str] | None = None) -> None:
        """Re-read the models on disk, keeping the selected target, or selecting the target and draft `in_use` (the
        loaded pair) when given; its drafts are checked once (rebuilding the list with signals on asked twice, and
        every draft and reason was listed twice)."""
        current = self.targets.currentItem().data(Qt.ItemDataRole.UserRole) if self.targets.currentItem() else None
        self.local = all_local_models()
        if in_use is not None:
            self.in_use = (self._listed_name(in_use[0]), self._listed_name(in_use[1]))
            current = self.in_use[0] if any(m.name == self.in_use[0] for m in self.local) else current
        self.targets.blockSignals(True)
        self.targets.clear()
        for model in self.local:
            item = self._target_item(model)
            self.targets.addItem(item)
            if model.name == current:
                self.targets.setCurrentItem(item)
        self.targets.blockSignals(False)
        self._target_changed()

    def _listed_name(self, name: str) -> str:
        """The name a loaded model is listed by: a folder or file loaded by another spelling of its path is listed
        by its resolved path."""
        path = Path(name).expanduser()
        if not path.is_absolute():
            return name
        return next((m.name for m in self.local if m.path.resolve() == path.resolve()), name)

    def shows(self, name: str) -> bool:
        """Whether the target selected is the model `name` (as listed)."""
        model = self._selected_local()
        return model is not None and model.name == name

    def _target_item(self, model: LocalModel) -> QListWidgetItem:
        base = BASE_MODEL_NOTE if model.base_model else ""
        sight = SEES_IMAGES if model.sees_images else ""
        state = ", ".join(filter(None, [f"{model.size_gb:.2f} GB", SOURCES[model.source], sight, model.unusable_because, base]))
        item = QListWidgetItem(f"{model_label(model.name)}  ({state})")
        item.setToolTip(model.problem or "\n".join(filter(None, [model.name, base])))
        if not model.complete:
            item.setForeground(self.palette().placeholderText())
        item.setData(Qt.ItemDataRole.UserRole, model.name)
        return item

    def _selected_local(self) -> LocalModel | None:
        item = self.targets.currentItem()
        name = item.data(Qt.ItemDataRole.UserRole) if item else None
        return next((m for m in self.local if m.name == name), None)

    def delete_selected(self) -> None:
        """Free the disk space of a downloaded model, after asking (the CLI's `delete`)."""
        model = self._selected_local()
        if model is None or model.source != "hf-cache":
            return
        answer = QMessageBox.question(
            self,
            "Delete model",
            f"Delete {model.name} ({model.size_gb:.2f} GB) from the Hugging Face cache? It can be downloaded again.",
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        freed = delete_cached_model(model.name)
        self.models_changed.emit()
        self.draft_note.setText(f"Deleted {model.name}, freeing {freed / 1e9:.2f} GB.")

    def forget_selected(self) -> None:
        """Stop listing an opened folder or file (a damaged one, or one no longer wanted)."""
        model = self._selected_local()
        if model is not None and model.source == "opened":
            forget_model(model.path)
            self.refresh()

    def _target_changed(self, *_: object) -> None:
        self.drafts.clear()
        self.left_out.clear()
        self.target_note.clear()
        self._verdicts = []
        selected = self._selected_local()
        self.use_local_button.setEnabled(selected is not None and selected.complete)
        self.delete_button.setEnabled(selected is not None and selected.source == "hf-cache")
        self.forget_button.setEnabled(selected is not None and selected.source == "opened")
        if selected is None:
            return
        if not selected.complete:
            self.draft_note.clear()
            self.target_note.setText(selected.problem)
            return
        self._show_drafts()
        candidates = [m.name for m in self.local if self._can_draft(m) and not self._is_target(m, selected)]
        if candidates:
            self.draft_note.setText("Checking which drafts fit the target…")
            self.drafts_check_requested.emit(selected.name, candidates)
        else:
            self.draft_note.setText(f"No other models on this computer to draft with{self._heads_note(selected)}.")

    @staticmethod
    def _heads_note(target: LocalModel | None) -> str:
        """For a target with drafters built in (MTP heads), that they need nothing loaded beside it (they load with it)."""
        built_in = built_in_drafters(target.path) if target is not None and target.path.is_dir() else ()
        if not built_in:
            return ""
        return f" (its {' and '.join(map(drafter_label, built_in))} needs none: choose it as the Drafter in the toolbar)"

    @staticmethod
    def _can_draft(model: LocalModel) -> bool:
        """A chat model, or a drafter folder SpecChat drafts with (no chat model, but a draft for its target)."""
        return model.complete or drafts_with(model.kind)

    @staticmethod
    def _is_target(model: LocalModel, target: LocalModel) -> bool:
        """The target, or the same folder listed under another name (a cache snapshot also opened as a folder)."""
        return model.name == target.name or model.path.resolve() == target.path.resolve()

    def _left_out_lines(self, target: LocalModel) -> list[tuple[str, str]]:
        """Each model not offered as a draft, as a line and its tooltip: those whose tokenizer differs, the target
        itself, and what is not a usable chat model, by its kind (its whole line, with what to pick instead, is the
        tooltip, and shows when it is selected as the target)."""
        lines = [(f"{model_label(v.name)}: {v.reason}", v.reason) for v in self._verdicts if not v.compatible]
        lines += [(f"{model_label(m.name)}: {TARGET_ITSELF}", m.name) for m in self.local if self._is_target(m, target)]
        return lines + [(f"{model_label(m.name)}: {m.unusable_because}", m.problem) for m in self.local
                        if not self._can_draft(m)]

    def _show_drafts(self) -> None:
        """Fill the draft list and "Not offered" from scratch: an answer that arrives twice shows each model once."""
        selected = self._selected_local()
        self.drafts.clear()
        self.left_out.clear()
        self.drafts.addItem(NO_DRAFT, "")
        for line, tooltip in self._left_out_lines(selected) if selected else []:
            item = QListWidgetItem(line)
            item.setToolTip(tooltip)
            self.left_out.addItem(item)
        kinds = {m.name: m.kind for m in self.local}
        for verdict in self._verdicts:
            if verdict.compatible:
                kind = kinds.get(verdict.name, "")
                self.drafts.addItem((f"{kind}: " if kind else "") + model_label(verdict.name), verdict.name)
        self.drafts.setCurrentIndex(min(1, self.drafts.count() - 1))  # a draft when there is one
        self._select_draft_in_use()

    def _select_draft_in_use(self) -> None:
        """With the target in use selected, its draft in use (when still offered)."""
        index = self.drafts.findData(self.in_use[1])
        if self.shows(self.in_use[0]) and index >= 0:
            self.drafts.setCurrentIndex(index)

    def _on_drafts_progress(self, target: str, done: int, total: int) -> None:
        self._checked = f"Checking which drafts fit the target: {done} of {total} checked…"
        if self._is_selected(target):
            self.draft_note.setText(self._checked)

    def _on_drafts_import(self, target: str, stage: str, done: int, total: int) -> None:
        """A GGUF file imported before its tokenizer can be checked, under the count: the stage and how far it is
        (a Gemma target's import stood for minutes as "0 of 1 checked…")."""
        if self._is_selected(target):
            far = f", {100 * done // total}%" if total else ""
            self.draft_note.setText(f"{self._checked}\n{stage}{far} (a GGUF file is imported once, to read its tokenizer)")

    def _is_selected(self, target: str) -> bool:
        item = self.targets.currentItem()
        return item is not None and item.data(Qt.ItemDataRole.UserRole) == target

    def _on_drafts_checked(self, target: str, verdicts: list[DraftVerdict]) -> None:
        if not self._is_selected(target):
            return  # an answer for a target no longer selected
        self._verdicts = list(verdicts)
        self._show_drafts()
        offered = self.drafts.count() - 1
        self.draft_note.setText(f"{offered} compatible draft{'s' if offered != 1 else ''}{self._heads_note(self._selected_local())}.")

    def open_folder(self) -> None:
        folder = open_folder(self, "models", "Open a model folder")
        if folder:
            self.add_local(Path(folder))

    def open_gguf(self) -> None:
        file = open_file(self, "models", "Open a GGUF file", "GGUF models (*.gguf)")
        if file:
            self.add_local(Path(file))

    def add_local(self, path: Path) -> None:
        """Remember a folder or GGUF file and select it as the target; one that is not a model is refused."""
        self.shown.emit()
        try:
            remember_model(path)
        except SpecChatError as error:
            self.target_note.setText(str(error))
            return
        self.refresh()
        for row in range(self.targets.count()):
            if self.targets.item(row).data(Qt.ItemDataRole.UserRole) == str(path.expanduser().resolve()):
                self.targets.setCurrentRow(row)

    def use_local(self) -> None:
        item = self.targets.currentItem()
        if item is None:
            return
        target = item.data(Qt.ItemDataRole.UserRole)
        draft = self.drafts.currentData() or ""
        sizes = sum(folder_size_gb(m.path) for m in self.local if m.name in (target, draft))
        if confirm_fit(self, check_fit(estimate_memory_gb(sizes))):
            self.pair_chosen.emit(target, draft)
