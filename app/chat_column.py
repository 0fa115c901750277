"""The window's middle column: the conversation, the banners under it (an error, an Undo), the message box."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from engine.conversations import ConversationStore

from .chat_view import ChatInput, ChatView
from .delete_undo import UndoDeleteBanner
from .error_banner import ErrorBanner


class ChatColumn(QWidget):
    """The chat, its banners and the input row; the window connects them.

    Attributes:
        chat: the messages.
        error_banner: what went wrong and what to do (hidden when nothing did).
        undo_banner: deletes messages and offers Undo.
        input, send_button: the message box and Send (Stop while an answer is generated).
    """

    def __init__(self, store: ConversationStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.chat = ChatView()
        self.store = store
        self.error_banner = ErrorBanner()
        self.undo_banner = UndoDeleteBanner(store)
        self.input = ChatInput()
        self.send_button = QPushButton("Send")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 6)
        for widget in (self.chat, self.error_banner, self.undo_banner):
            layout.addWidget(widget)
        row = QHBoxLayout()
        row.addWidget(self.input)
        row.addWidget(self.send_button)
        layout.addLayout(row)

    def show_error(self, message: str) -> None:
        self.error_banner.setText(message)
        self.error_banner.setVisible(True)

    def hide_error(self) -> None:
        """Except that conversations are not being saved: that notice holds until quitting."""
        self.error_banner.setText(self.store.degraded or self.error_banner.text())
        self.error_banner.setVisible(bool(self.store.degraded))
