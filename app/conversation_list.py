"""The sidebar of saved conversations: search, reopen, rename, a chat's own system prompt, export, delete.

Right-clicking a conversation acts on it without opening it: the highlight stays on the conversation shown.
Deleting asks first. A search that finds nothing says so, rather than leaving a blank list that looks broken.
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine.conversations import ConversationStore

from .file_dialogs import save_file
from .quiet_text import make_quiet
from .settings import AppSettings

# Characters no file name may hold on one system or another (Windows' set, which covers macOS' ":" and Unix' "/"),
# and control characters such as the line breaks a title taken from a first message can hold.
FORBIDDEN_IN_FILE_NAMES = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
LONGEST_FILE_STEM = 80


class ConversationList(QWidget):
    """Lists conversations, most recent first, filtered by the search box.

    Signals:
        opened(int): a conversation was chosen.
        new_requested(): the New chat button was clicked.
        delete_confirmed(int): the user confirmed deleting a conversation.
        changed(int): a conversation's title or system prompt changed.
        exported(str): a conversation was written to this file.
        export_failed(str): what kept an export from being written, and what to do.

    Attributes:
        current: the conversation shown (kept highlighted).
    """

    opened = Signal(int)
    new_requested = Signal()
    delete_confirmed = Signal(int)
    changed = Signal(int)
    exported = Signal(str)
    export_failed = Signal(str)

    def __init__(self, store: ConversationStore, settings: AppSettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store, self.settings = store, settings
        self.current: int | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        new = QPushButton("New chat")
        new.setToolTip("Start a new conversation (Ctrl+N)")
        new.clicked.connect(self.new_requested)
        layout.addWidget(new)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search chats")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(lambda _text: self.refresh(self.current))
        layout.addWidget(self.search)
        self.no_match = QLabel()
        self.no_match.setWordWrap(True)
        make_quiet(self.no_match, "padding: 6px 2px;")
        self.no_match.setVisible(False)
        layout.addWidget(self.no_match)
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
        """List the chats, `current` (the one shown; None: a new chat) selected and remembered for the next launch."""
        if self.settings is not None and current != self.current:
            self.settings.save_last_chat(current)
        self.current = current
        self.list.blockSignals(True)
        self.list.clear()
        for info in self.store.conversations(self.search.text()):
            item = QListWidgetItem(info.title)
            item.setData(Qt.ItemDataRole.UserRole, info.id)
            item.setToolTip(info.title)
            self.list.addItem(item)
            if info.id == current:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)
        self._say_when_nothing_matches()

    def last_shown(self) -> int | None:
        """The chat shown when the window last closed, if it is still there (None: a new chat, or it was deleted)."""
        last = self.settings.last_chat() if self.settings is not None else None
        return last if last is not None and self.store.exists(last) else None

    def _say_when_nothing_matches(self) -> None:
        """The query is cut to the sidebar's width: a long word cannot wrap, and would be clipped instead."""
        query = self.search.text().strip()
        metrics = self.no_match.fontMetrics()
        room = max(self.width() - metrics.horizontalAdvance("“”.") - 12, 40)
        self.no_match.setText(f"No chats match “{metrics.elidedText(query, Qt.TextElideMode.ElideRight, room)}”.")
        self.no_match.setVisible(bool(query) and self.list.count() == 0)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._say_when_nothing_matches()

    def _menu(self, position: QPoint) -> None:
        item = self.list.itemAt(position)
        if item is None:
            return
        conversation_id = item.data(Qt.ItemDataRole.UserRole)
        menu = QMenu(self)
        menu.addAction("Rename…", lambda: self.rename(conversation_id))
        menu.addAction("System prompt…", lambda: self.edit_system_prompt(conversation_id))
        menu.addAction("Export as Markdown…", lambda: self.export(conversation_id))
        menu.addSeparator()
        menu.addAction("Delete…", lambda: self.confirm_delete(conversation_id))
        self.show_menu(menu, self.list.mapToGlobal(position))
        self.refresh(self.current)  # the right-clicked row is not the one shown

    def show_menu(self, menu: QMenu, at: QPoint) -> None:
        menu.exec(at)

    def rename(self, conversation_id: int, title: str | None = None) -> None:
        if title is None:
            dialog = QInputDialog(self)
            dialog.setWindowTitle("Rename conversation")
            dialog.setLabelText("Title:")
            dialog.setTextValue(self.store.title(conversation_id))
            dialog.resize(420, dialog.sizeHint().height())
            if not dialog.exec():
                return
            title = dialog.textValue()
        self.store.rename(conversation_id, title)
        self.refresh(self.current)
        self.changed.emit(conversation_id)

    def edit_system_prompt(self, conversation_id: int, text: str | None = None) -> None:
        """This chat's own system prompt (empty: the one from Settings)."""
        if text is None:
            dialog = SystemPromptDialog(self.store.title(conversation_id), self.store.system_prompt(conversation_id), self)
            if not dialog.exec():
                return
            text = dialog.text.toPlainText().strip()
        self.store.set_system_prompt(conversation_id, text)
        self.changed.emit(conversation_id)

    def export(self, conversation_id: int, path: str | None = None) -> None:
        if path is None:
            path = save_file(self, "exports", "Export as Markdown", markdown_file_name(self.store.title(conversation_id)), "Markdown (*.md)")
        if not path:
            return
        try:
            Path(path).write_text(self.store.export_markdown(conversation_id), encoding="utf-8")
        except OSError as error:  # a folder gone or read-only, a full disk: said, never a traceback
            self.export_failed.emit(f"Could not export the chat to {path}: {error.strerror}. Choose another folder.")
            return
        self.exported.emit(path)

    def confirm_delete(self, conversation_id: int) -> None:
        answer = QMessageBox.question(
            self,
            "Delete conversation",
            f"Delete “{self.store.title(conversation_id)}” and all its messages? This cannot be undone.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_confirmed.emit(conversation_id)


def markdown_file_name(title: str) -> str:
    """A file name for a conversation's export, from its title: any title makes a name every system takes.

    Forbidden and control characters become spaces; leading and trailing dots, ellipses and spaces go (a title
    ending in "." made "blue..md", a leading dot hides the file); a long title is cut at a word."""
    stem = " ".join(FORBIDDEN_IN_FILE_NAMES.sub(" ", title).split())
    if len(stem) > LONGEST_FILE_STEM:
        cut = stem[:LONGEST_FILE_STEM + 1]
        stem = cut.rsplit(" ", 1)[0] if " " in cut else cut[:LONGEST_FILE_STEM]
    return f"{stem.strip(' .…') or 'Conversation'}.md"


class SystemPromptDialog(QDialog):
    """Edits one chat's system prompt."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("System prompt for this chat")
        self.resize(480, 260)
        layout = QVBoxLayout(self)
        self.note = note = QLabel(f"Instructions for “{title}” only. Empty: the system prompt from Settings.")
        note.setWordWrap(True)
        note.setTextFormat(Qt.TextFormat.PlainText)  # a title is the user's text: "<b>&</b>" is shown, not read as HTML
        layout.addWidget(note)
        self.text = QPlainTextEdit(text)
        layout.addWidget(self.text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
