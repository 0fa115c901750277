"""The window's middle column: the conversation, the banners under it (an error, an Undo), the message box with
its attached files, and the notes over it (images or MCP tools the loaded model cannot take)."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from .attachments_bar import AttachmentsBar
from .chat_tools import unseen_tools_line
from .chat_view import ChatView
from .delete_undo import UndoDeleteBanner
from .error_banner import ErrorBanner
from .image_attachments import ImageTokens
from .message_box import MessageBox
from .palette import notice_colour
from .text_size import TextSize
from .tool_cards import ToolCards


class ChatColumn(QWidget):
    """The chat, its banners and the input row; the window connects them.

    Attributes:
        chat: the messages.
        error_banner: what went wrong and what to do (hidden when nothing did).
        undo_banner: deletes messages and offers Undo.
        input, send_button: the message box and Send (Stop while an answer is generated).
        attachments: the files and images attached to the message being typed (their chips over the box, its
            paperclip, the note when the model cannot see the images).
        image_tokens: saves the tokens each sent image became, for its span in the question.
        tool_cards: the MCP calls shown in the answers that made them.
        tools_note: the line over the box when MCP tools are on and the loaded model cannot be shown them (in bold
            once a message went without them).
        input_row: the row they are in (the window adds the Think switch).
        text_size: the size of the messages' and the box's text (Cmd/Ctrl with +, - and 0).
    """

    def __init__(self, session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.chat = ChatView()
        self.tool_cards = ToolCards(session.tools, self.chat, session.settings.show_markdown)
        self.store = store = session.store
        self.error_banner = ErrorBanner()
        self.error_banner.dismissed.connect(self.hide_error)
        self.undo_banner = UndoDeleteBanner(store)
        self.input = MessageBox("Message (Enter sends, Shift+Enter for a new line)")
        self.input.setMaximumHeight(110)
        self.send_button = QPushButton("Send")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 6)
        self.attachments = AttachmentsBar(session, self.input, self.show_error)
        self.image_tokens = ImageTokens(session, self.chat, self)
        self.tools_note = QLabel(wordWrap=True)
        self.tools_note.setObjectName("unseenToolsNote")
        self.tools_note.setVisible(False)
        self._session = session
        session.pair_loaded.connect(self.show_tools_note)
        session.tools.servers.changed.connect(self.show_tools_note)
        session.answer_started.connect(lambda _answer: self.show_tools_note(sent=True))
        for widget in (self.chat, self.error_banner, self.undo_banner, self.attachments, self.attachments.reading, self.attachments.unseen,
                       self.tools_note):
            layout.addWidget(widget)
        self.input_row = QHBoxLayout()
        self.input_row.addWidget(self.attachments.paperclip)
        self.input_row.addWidget(self.input)
        self.input_row.addWidget(self.send_button)
        layout.addLayout(self.input_row)
        self.text_size = TextSize([self.chat.container, self.input], session.settings)

    def show_tools_note(self, *_: object, sent: bool = False) -> None:
        """Say over the box that the MCP tools are not offered to this model, or that servers could not start, if so
        (bold when a message was just sent without them, where the user looks as they send)."""
        servers = self._session.tools.servers
        note = "\n".join(filter(None, [unseen_tools_line(self._session.pair, servers.tools), servers.failure_line()]))
        self.tools_note.setText(note)
        self.tools_note.setStyleSheet(f"color: {notice_colour(self.palette()).name()};" + (" font-weight: bold;" if sent else ""))
        self.tools_note.setVisible(bool(note))

    def show_error(self, message: str) -> None:
        self.error_banner.setText(message)
        self.error_banner.setVisible(True)

    def hide_error(self) -> None:
        """Except that conversations are not being saved: that notice holds until quitting."""
        self.error_banner.setText(self.store.degraded or self.error_banner.text())
        self.error_banner.setVisible(bool(self.store.degraded))
