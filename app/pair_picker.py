"""Choosing a draft/target pair: the recommended list with downloads, or models already on this computer.

Downloads run on the download worker and tokenizer checks on the engine worker; this dialog only shows
their progress and verdicts. For a chosen target it offers only the drafts whose tokenizers match, and lists
the others with the reason each was left out. When the hub cannot be reached it says so and opens on the
models that are on disk.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.models.catalog import PairStatus, default_pair, pair_statuses
from engine.models.downloads import DownloadProgress

from .download_worker import DownloadWorker
from .local_models import LocalModelsTab, confirm_fit
from .screen_fit import fitted, screen_room
from .worker import EngineWorker

PREFERRED = QSize(1000, 560)  # the picker's size where the screen has room
WRAPPED = (0, 2)  # the recommended list's long columns, the pair's names and its use: they share the width left


class WrappedRows(QStyledItemDelegate):
    """Rows as tall as their text wrapped at its column's width: a QTreeView sizes rows as if every column were
    unbounded, so wrapped text had a one-line row and its second line was cut off."""

    def __init__(self, view: QTreeWidget) -> None:
        super().__init__(view)
        self.view = view

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:  # noqa: N802 - Qt API
        if index.column() not in WRAPPED:
            return super().sizeHint(option, index)  # one line: its width is the column's
        option = QStyleOptionViewItem(option)
        option.rect = QRect(0, 0, self.view.columnWidth(index.column()), 1)  # a valid rect: Qt wraps within it
        return super().sizeHint(option, index)


class PairPickerDialog(QDialog):
    """Pick (and if needed download) a pair.

    Args:
        engine: the engine worker (tokenizer checks run there).
        downloads: the download worker.

    Signals:
        pair_chosen(str, str): the target and draft to load ("" for no draft).
        download_requested(list): repo ids for the download worker.
        hub_check_requested(): ask the download worker whether the hub answers.

    Attributes:
        on_disk: the "On this computer" tab.
    """

    pair_chosen = Signal(str, str)
    download_requested = Signal(list)
    hub_check_requested = Signal()

    def __init__(self, engine: EngineWorker, downloads: DownloadWorker, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Choose models")
        self.resize(fitted(PREFERRED, screen_room(parent or self)))
        self.downloads = downloads
        self.statuses: list[PairStatus] = []
        self.downloading: list[str] = []
        self.in_use: tuple[str, str] | None = None  # the loaded pair's target and draft, as the window gave them
        self.hub_reachable = True  # until a check says otherwise: then Download is off, not offered to fail

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
        self.on_disk = LocalModelsTab()
        self.tabs.addTab(self.on_disk, "On this computer")
        self.on_disk.pair_chosen.connect(self._chosen)
        self.on_disk.models_changed.connect(self.refresh)
        self.on_disk.shown.connect(lambda: self.tabs.setCurrentIndex(1))

        self.download_requested.connect(downloads.download)
        self.hub_check_requested.connect(downloads.check_hub)
        downloads.download_progress.connect(self._on_progress)
        downloads.download_finished.connect(self._on_downloaded)
        downloads.download_errored.connect(self._on_download_failed)
        downloads.download_cancelled.connect(self._on_download_cancelled)
        downloads.hub_check_finished.connect(self._on_hub_checked)
        self.on_disk.drafts_check_requested.connect(engine.check_drafts)
        engine.drafts_check_progress.connect(self.on_disk._on_drafts_progress)
        engine.drafts_check_import.connect(self.on_disk._on_drafts_import)
        engine.drafts_check_finished.connect(self.on_disk._on_drafts_checked)
        self.refresh()

    # --- recommended pairs -------------------------------------------------------------------------------

    def _recommended_tab(self) -> QWidget:
        tab = QWidget()
        layout = QVBoxLayout(tab)
        self.table = QTreeWidget()
        self.table.setHeaderLabels(["Pair (draft → target)", "Drafter", "Use", "Download", "Memory", "On this computer"])
        self.table.setRootIsDecorated(False)
        self._fit_columns()
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

    def _fit_columns(self) -> None:
        """Every column shows its text at any width down to a 900 px window (the last one was cut off): the short
        columns take their text's width, and the pair's names and its use share the rest, wrapped."""
        self.table.setWordWrap(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.table.setItemDelegate(WrappedRows(self.table))
        header = self.table.header()
        header.setStretchLastSection(False)
        header.sectionResized.connect(lambda *_: self.table.doItemsLayout())  # rows as tall as their wrapped text
        for column in range(self.table.columnCount()):
            stretch = column in WRAPPED
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch if stretch else QHeaderView.ResizeMode.ResizeToContents)

    def refresh(self, in_use: tuple[str, str] | None = None) -> None:
        """Re-read the catalog's download state and the models on disk; with `in_use` (the loaded pair's target and
        draft), select that pair, in the tab that lists it: the picker opens on the pair in use."""
        current = self.selected_status()
        self.in_use = in_use or self.in_use
        self.statuses = pair_statuses()
        listed = next((s.pair.id for s in self.statuses if in_use == (s.pair.target, s.pair.draft)), None)
        selected = listed or (current.pair.id if current else default_pair().id)
        self.table.clear()
        for status in self.statuses:
            pair = status.pair
            state = "downloaded" if status.downloaded else f"{status.to_download_gb:.2f} GB to download"
            fit = f"{pair.memory_gb:.1f} GB" + ("" if status.fit.fits else " (too big)")
            columns = [pair.short_label, pair.drafter_name, pair.use_case, f"{pair.download_gb:.2f} GB", fit, state]
            item = QTreeWidgetItem(columns)
            item.setData(0, Qt.ItemDataRole.UserRole, pair.id)
            drafts = f"draft {pair.draft}" if pair.draft else "drafts with the target's own MTP heads"
            item.setToolTip(0, f"{drafts}\ntarget {pair.target}\nsuggested draft length {pair.num_draft}")
            item.setToolTip(4, status.fit.message())
            self.table.addTopLevelItem(item)
            if pair.id == selected:
                self.table.setCurrentItem(item)
        self.on_disk.refresh(in_use)
        if in_use is not None and (listed or self.on_disk.shows(self.on_disk.in_use[0])):
            self.tabs.setCurrentIndex(0 if listed else 1)
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
        self.download_button.setEnabled(status is not None and not status.downloaded and self.hub_reachable)
        self.use_button.setEnabled(status is not None and status.downloaded and not busy)
        if status and not busy:
            to_use = f" Download {status.to_download_gb:.2f} GB to use it" if self.hub_reachable else " It downloads once the hub can be reached"
            self.status.setText(f"{status.pair.short_label}: {status.fit.message()}" + ("" if status.downloaded else to_use + "."))

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
        if confirm_fit(self, status.fit):
            self._chosen(status.pair.target, status.pair.draft)

    def _chosen(self, target: str, draft: str) -> None:
        """Load the pair chosen, unless it is the pair in use (as given, or as the tab lists it): choosing it again
        closes the picker instead of reloading it (which stopped any answer and kept the user waiting)."""
        if (target, draft) not in (self.in_use, self.on_disk.in_use):
            self.pair_chosen.emit(target, draft)
        self.accept()

    # --- the hub ----------------------------------------------------------------------------------------

    def check_hub(self) -> None:
        self.hub_check_requested.emit()

    def _on_hub_checked(self, reachable: bool, message: str) -> None:
        self.hub_reachable = reachable
        self._update_buttons()
        self.banner.setText(message)
        self.banner.setVisible(not reachable)
        if not reachable:
            self.tabs.setCurrentIndex(1)
