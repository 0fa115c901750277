"""Choosing a draft/target pair: the recommended list with downloads, or models already on this computer.

Downloads run on the download worker and tokenizer checks on the engine worker; this dialog only shows
their progress and verdicts. For a chosen target it offers only the drafts whose tokenizers match, and lists
the others with the reason each was left out. When the hub cannot be reached it says so and opens on the
models that are on disk.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.models.catalog import PairStatus, default_pair, pair_statuses
from engine.models.downloads import DownloadProgress
from engine.models.memory import check_fit, estimate_memory_gb, folder_size_gb
from engine.models.model_store import LocalModel, all_local_models, delete_cached_model, remember_model

from .download_worker import DownloadWorker
from .worker import DraftVerdict, EngineWorker

NO_DRAFT = "None: prompt lookup only"
SOURCES = {"hf-cache": "downloaded", "lm-studio": "LM Studio", "opened": "opened"}


def model_label(name: str) -> str:
    """A hub repo id as it is; a folder or file by its name and the folder it is in."""
    path = Path(name)
    if not path.is_absolute():
        return name
    return f"{path.name} — {path.parent}"


class PairPickerDialog(QDialog):
    """Pick (and if needed download) a pair.

    Args:
        engine: the engine worker (tokenizer checks run there).
        downloads: the download worker.

    Signals:
        pair_chosen(str, str): the target and draft to load ("" for no draft).
        download_requested(list): repo ids for the download worker.
        drafts_check_requested(str, list): a target and candidate drafts for the engine worker.
        hub_check_requested(): ask the download worker whether the hub answers.
    """

    pair_chosen = Signal(str, str)
    download_requested = Signal(list)
    drafts_check_requested = Signal(str, list)
    hub_check_requested = Signal()

    def __init__(self, engine: EngineWorker, downloads: DownloadWorker, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Choose models")
        self.resize(1000, 560)
        self.downloads = downloads
        self.statuses: list[PairStatus] = []
        self.local: list[LocalModel] = []
        self.downloading: list[str] = []

        layout = QVBoxLayout(self)
        self.banner = QLabel()
        self.banner.setObjectName("offlineBanner")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet("background: #fff3cd; color: #5c4400; padding: 8px; border-radius: 4px;")
        self.banner.setVisible(False)
        layout.addWidget(self.banner)
        self.tabs = QTabWidget()
        layout.addWidget(self.tabs)
        self.tabs.addTab(self._recommended_tab(), "Recommended pairs")
        self.tabs.addTab(self._local_tab(), "On this computer")

        self.download_requested.connect(downloads.download)
        self.hub_check_requested.connect(downloads.check_hub)
        downloads.download_progress.connect(self._on_progress)
        downloads.download_finished.connect(self._on_downloaded)
        downloads.download_errored.connect(self._on_download_failed)
        downloads.download_cancelled.connect(self._on_download_cancelled)
        downloads.hub_check_finished.connect(self._on_hub_checked)
        self.drafts_check_requested.connect(engine.check_drafts)
        engine.drafts_check_finished.connect(self._on_drafts_checked)
        self.refresh()

    # --- recommended pairs -------------------------------------------------------------------------------

    def _recommended_tab(self) -> QWidget:
        tab = QWidget()
        layout = QVBoxLayout(tab)
        self.table = QTreeWidget()
        self.table.setHeaderLabels(["Pair (draft → target)", "Use", "Download", "Memory", "On this computer"])
        self.table.setRootIsDecorated(False)
        self.table.currentItemChanged.connect(self._update_buttons)
        layout.addWidget(self.table)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setVisible(False)
        layout.addWidget(self.progress)
        self.status = QLabel()
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        buttons = QHBoxLayout()
        buttons.addStretch()
        self.download_button = QPushButton("Download")
        self.download_button.clicked.connect(self.download_selected)
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.clicked.connect(self.cancel_download)
        self.cancel_button.setVisible(False)
        self.use_button = QPushButton("Use this pair")
        self.use_button.setDefault(True)
        self.use_button.clicked.connect(self.use_selected)
        for button in (self.download_button, self.cancel_button, self.use_button):
            buttons.addWidget(button)
        layout.addLayout(buttons)
        return tab

    def refresh(self) -> None:
        """Re-read the catalog's download state and the models on disk."""
        current = self.selected_status()
        selected = current.pair.id if current else default_pair().id
        self.statuses = pair_statuses()
        self.table.clear()
        for status in self.statuses:
            pair = status.pair
            state = "downloaded" if status.downloaded else f"{status.to_download_gb:.2f} GB to download"
            fit = f"{pair.memory_gb:.1f} GB" + ("" if status.fit.fits else " (too big)")
            item = QTreeWidgetItem([pair.short_label, pair.use_case, f"{pair.download_gb:.2f} GB", fit, state])
            item.setData(0, Qt.ItemDataRole.UserRole, pair.id)
            item.setToolTip(0, f"draft {pair.draft}\ntarget {pair.target}\nsuggested draft length {pair.num_draft}")
            item.setToolTip(3, status.fit.message())
            self.table.addTopLevelItem(item)
            if pair.id == selected:
                self.table.setCurrentItem(item)
        for column in range(self.table.columnCount()):
            self.table.resizeColumnToContents(column)
        self._refresh_local()
        self._update_buttons()

    def selected_status(self) -> PairStatus | None:
        item = self.table.currentItem() if hasattr(self, "table") else None
        if item is None:
            return None
        pair_id = item.data(0, Qt.ItemDataRole.UserRole)
        return next((s for s in self.statuses if s.pair.id == pair_id), None)

    def _update_buttons(self, *_: object) -> None:
        status = self.selected_status()
        busy = bool(self.downloading)
        self.download_button.setVisible(not busy)
        self.cancel_button.setVisible(busy)
        self.download_button.setEnabled(status is not None and not status.downloaded)
        self.use_button.setEnabled(status is not None and status.downloaded and not busy)
        if status and not busy:
            self.status.setText(
                f"{status.pair.short_label}: {status.fit.message()}"
                + ("" if status.downloaded else f" Download {status.to_download_gb:.2f} GB to use it.")
            )

    def download_selected(self) -> None:
        status = self.selected_status()
        if status is None:
            return
        repos = [r for r, done in ((status.pair.draft, status.draft_downloaded), (status.pair.target, status.target_downloaded)) if not done]
        self.downloading = repos
        self.progress.setValue(0)
        self.progress.setVisible(True)
        self.status.setText(f"Downloading {repos[0]}…")
        self._update_buttons()
        self.download_requested.emit(repos)

    def cancel_download(self) -> None:
        """Called on the GUI thread: a direct call (a signal connection to the worker's method would be queued
        behind the running download and arrive only after it)."""
        self.downloads.cancel()
        self.status.setText("Cancelling…")

    def _on_progress(self, p: DownloadProgress) -> None:
        self.progress.setValue(int(p.fraction * 1000))
        self.progress.setFormat(f"{p.repo_id.split('/')[-1]}: %p%")
        self.status.setText(f"Downloading {p.repo_id}: {p.describe()}")

    def _on_downloaded(self, repo_id: str, path: str) -> None:
        if repo_id in self.downloading:
            self.downloading.remove(repo_id)
        if not self.downloading:
            self.progress.setVisible(False)
            self.refresh()
            self.status.setText(f"Downloaded. {self.status.text()}")

    def _on_download_failed(self, repo_id: str, message: str) -> None:
        self.downloading = []
        self.progress.setVisible(False)
        self._update_buttons()
        self.status.setText(message)

    def _on_download_cancelled(self, repo_id: str) -> None:
        self.downloading = []
        self.progress.setVisible(False)
        self._update_buttons()
        self.status.setText(f"Download of {repo_id} cancelled. Download again to resume where it stopped.")

    def use_selected(self) -> None:
        status = self.selected_status()
        if status is None or not status.downloaded:
            return
        if self._confirm_fit(status.fit):
            self.pair_chosen.emit(status.pair.target, status.pair.draft)
            self.accept()

    def _confirm_fit(self, fit) -> bool:  # noqa: ANN001 - engine.models.memory.Fit
        if fit.fits:
            return True
        answer = QMessageBox.warning(
            self,
            "These models may not fit",
            fit.message() + "\n\nLoad them anyway?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    # --- models on this computer ---------------------------------------------------------------------------

    def _local_tab(self) -> QWidget:
        tab = QWidget()
        layout = QHBoxLayout(tab)
        left = QVBoxLayout()
        left.addWidget(QLabel("Target model"))
        self.targets = QListWidget()
        self.targets.currentItemChanged.connect(self._target_changed)
        left.addWidget(self.targets)
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
        right.addWidget(QLabel("Draft model (only drafts with the target's tokenizer)"))
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
        self.delete_button = QPushButton("Delete from disk…")
        self.delete_button.setToolTip("Remove the selected downloaded model from the Hugging Face cache")
        self.delete_button.clicked.connect(self.delete_selected)
        local_buttons.addWidget(self.delete_button)
        self.use_local_button = QPushButton("Use this pair")
        self.use_local_button.clicked.connect(self.use_local)
        local_buttons.addWidget(self.use_local_button)
        right.addLayout(local_buttons)
        layout.addLayout(right, 4)
        return tab

    def _refresh_local(self) -> None:
        current = self.targets.currentItem().data(Qt.ItemDataRole.UserRole) if self.targets.currentItem() else None
        self.local = all_local_models()
        self.targets.clear()
        for model in self.local:
            item = QListWidgetItem(f"{model_label(model.name)}  ({model.size_gb:.2f} GB, {SOURCES[model.source]})")
            item.setToolTip(model.name)
            item.setData(Qt.ItemDataRole.UserRole, model.name)
            self.targets.addItem(item)
            if model.name == current:
                self.targets.setCurrentItem(item)
        self.use_local_button.setEnabled(self.targets.currentItem() is not None)

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
        self.refresh()
        self.draft_note.setText(f"Deleted {model.name}, freeing {freed / 1e9:.2f} GB.")

    def _target_changed(self, *_: object) -> None:
        item = self.targets.currentItem()
        self.drafts.clear()
        self.left_out.clear()
        self.use_local_button.setEnabled(item is not None)
        selected = self._selected_local()
        self.delete_button.setEnabled(selected is not None and selected.source == "hf-cache")
        if item is None:
            return
        target = item.data(Qt.ItemDataRole.UserRole)
        self.drafts.addItem(NO_DRAFT, "")
        candidates = [m.name for m in self.local if m.name != target]
        if candidates:
            self.draft_note.setText("Checking which drafts share the target's tokenizer…")
            self.drafts_check_requested.emit(target, candidates)
        else:
            self.draft_note.setText("No other models on this computer to draft with.")

    def _on_drafts_checked(self, target: str, verdicts: list[DraftVerdict]) -> None:
        item = self.targets.currentItem()
        if item is None or item.data(Qt.ItemDataRole.UserRole) != target:
            return  # an answer for a target no longer selected
        for verdict in verdicts:
            if verdict.compatible:
                self.drafts.addItem(model_label(verdict.name), verdict.name)
            else:
                left = QListWidgetItem(f"{model_label(verdict.name)}: {verdict.reason}")
                left.setToolTip(verdict.reason)
                self.left_out.addItem(left)
        offered = self.drafts.count() - 1
        self.draft_note.setText(f"{offered} compatible draft{'s' if offered != 1 else ''}.")
        if offered:
            self.drafts.setCurrentIndex(1)

    def open_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a model folder")
        if folder:
            self.add_local(Path(folder))

    def open_gguf(self) -> None:
        file, _ = QFileDialog.getOpenFileName(self, "Open a GGUF file", filter="GGUF models (*.gguf)")
        if file:
            self.add_local(Path(file))

    def add_local(self, path: Path) -> None:
        """Remember a folder or GGUF file and select it as the target."""
        remember_model(path)
        self._refresh_local()
        for row in range(self.targets.count()):
            if self.targets.item(row).data(Qt.ItemDataRole.UserRole) == str(path.expanduser().resolve()):
                self.targets.setCurrentRow(row)
        self.tabs.setCurrentIndex(1)

    def use_local(self) -> None:
        item = self.targets.currentItem()
        if item is None:
            return
        target = item.data(Qt.ItemDataRole.UserRole)
        draft = self.drafts.currentData() or ""
        sizes = sum(folder_size_gb(m.path) for m in self.local if m.name in (target, draft))
        if self._confirm_fit(check_fit(estimate_memory_gb(sizes))):
            self.pair_chosen.emit(target, draft)
            self.accept()

    # --- the hub ----------------------------------------------------------------------------------------

    def check_hub(self) -> None:
        self.hub_check_requested.emit()

    def _on_hub_checked(self, reachable: bool, message: str) -> None:
        self.banner.setText(message)
        self.banner.setVisible(not reachable)
        if not reachable:
            self.tabs.setCurrentIndex(1)
