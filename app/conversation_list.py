"""The sidebar of saved conversations: reopen, rename, delete, export as Markdown."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QListWidget, QListWidgetItem, QMenu, QPushButton, QVBoxLayout, QWidget

from .conversations import ConversationStore


class ConversationList(QWidget):
    """Lists conversations, most recent first.

    Signals:
        opened(int): a conversation was chosen.
        new_requested(): the New chat button was clicked.
        rename_requested(int), delete_requested(int), export_requested(int): from the context menu.
    """

    opened = Signal(int)
    new_requested = Signal()
    rename_requested = Signal(int)
    delete_requested = Signal(int)
    export_requested = Signal(int)

    def __init__(self, store: ConversationStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        new = QPushButton("New chat")
        new.clicked.connect(self.new_requested)
        top.addWidget(new)
        layout.addLayout(top)
        self.list = QListWidget()
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.itemActivated.connect(self._open)
        self.list.itemClicked.connect(self._open)
        layout.addWidget(self.list)
        self.setMinimumWidth(170)

    def _open(self, item: QListWidgetItem) -> None:
        self.opened.emit(item.data(Qt.ItemDataRole.UserRole))

    def refresh(self, current: int | None = None) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for info in self.store.conversations():
            item = QListWidgetItem(info.title)
            item.setData(Qt.ItemDataRole.UserRole, info.id)
            item.setToolTip(info.title)
            self.list.addItem(item)
            if info.id == current:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)

    def _menu(self, position) -> None:  # noqa: ANN001 - QPoint
        item = self.list.itemAt(position)
        if item is None:
            return
        conversation_id = item.data(Qt.ItemDataRole.UserRole)
        menu = QMenu(self)
        menu.addAction("Rename…", lambda: self.rename_requested.emit(conversation_id))
        menu.addAction("Export as Markdown…", lambda: self.export_requested.emit(conversation_id))
        menu.addAction("Delete", lambda: self.delete_requested.emit(conversation_id))
        menu.exec(self.list.mapToGlobal(position))
