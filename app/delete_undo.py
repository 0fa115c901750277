"""Deleting a message at once, with Undo: a banner under the chat says what went and takes it back on a click.

Delete also deletes what followed the message (every branch under it), so a slip of the mouse could cost a
long exchange. Asking first slows every deliberate delete; an Undo costs nothing until it is needed. Before
deleting, the conversation's messages are copied as they are saved (every column, every branch, which branch is
shown); Undo puts that copy back, as long as nothing else changed the conversation since (a new answer, another
delete, another branch shown): then it says so instead of overwriting the change.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from engine.conversation_title import follow_first_question
from engine.conversations import ConversationStore

OFFERED_FOR_MS = 20_000


@dataclass
class MessagesCopy:
    """A conversation's saved messages, every column of every row, as a delete found them and as it left them."""

    conversation_id: int
    columns: list[str]
    before: list[tuple]
    after: list[tuple]


def _rows(db: sqlite3.Connection, conversation_id: int) -> tuple[list[str], list[tuple]]:
    cursor = db.execute("SELECT * FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,))
    return [column[0] for column in cursor.description], cursor.fetchall()


def delete_keeping_a_copy(store: ConversationStore, conversation_id: int, message_id: int) -> MessagesCopy:
    """Delete a message and what followed it; the copy that undoes it."""
    columns, before = _rows(store.db, conversation_id)
    store.delete_message(message_id)
    return MessagesCopy(conversation_id, columns, before, _rows(store.db, conversation_id)[1])


def restore(store: ConversationStore, copy: MessagesCopy) -> str:
    """Put the deleted messages back; "" when done, else why not (in one sentence, saying what to do)."""
    db = store.db
    if _rows(db, copy.conversation_id)[1] != copy.after:
        return "The chat changed after the delete, so it was not undone: the change is kept."
    names = ", ".join(copy.columns)
    marks = ", ".join("?" for _ in copy.columns)
    try:
        db.execute("DELETE FROM messages WHERE conversation_id = ?", (copy.conversation_id,))
        # In id order: a message always has a larger id than the one it follows.
        db.executemany(f"INSERT INTO messages ({names}) VALUES ({marks})", copy.before)
        db.commit()
    except sqlite3.Error as error:
        db.rollback()
        return f"Could not undo the delete ({error}). The messages after the delete are kept."
    follow_first_question(store, copy.conversation_id)  # a first question back: its title too, unless renamed
    return ""


def deleted_text(following: int) -> str:
    if following == 0:
        return "Deleted the message."
    return f"Deleted the message and the {following} after it." if following > 1 else "Deleted the message and the one after it."


class UndoDeleteBanner(QFrame):
    """Deletes messages and offers, for a while, to take the last delete back.

    Signals:
        restored(int): a delete was undone in this conversation (redraw it).
        failed(str): Undo could not put the messages back; the message says why.
    """

    restored = Signal(int)
    failed = Signal(str)

    def __init__(self, store: ConversationStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._store = store
        self._copy: MessagesCopy | None = None
        self.setObjectName("undoBanner")
        self.setStyleSheet("#undoBanner { background: palette(alternate-base); border: 1px solid palette(mid); border-radius: 4px; }")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 4, 2)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.undo_button = QPushButton("Undo")
        self.undo_button.clicked.connect(self.undo)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.undo_button)
        self._timer = QTimer(self, singleShot=True, interval=OFFERED_FOR_MS)
        self._timer.timeout.connect(self.withdraw)
        self._ticker = QTimer(self, interval=1000)  # the button counts down: it went without notice, a user found
        self._ticker.timeout.connect(lambda: self.show_time_left(self._timer.remainingTime()))
        self.setVisible(False)

    def show_time_left(self, ms: int) -> None:
        """"Undo (13 s)": the seconds left to take the delete back, rounded up."""
        self.undo_button.setText(f"Undo ({max(0, -(-ms // 1000))} s)")

    def delete(self, conversation_id: int, message_id: int, following: int) -> None:
        """Delete the message (and the `following` ones shown after it), and offer Undo."""
        self._copy = delete_keeping_a_copy(self._store, conversation_id, message_id)
        self.label.setText(deleted_text(following))
        self.setVisible(True)
        self._timer.start()
        self._ticker.start()
        self.show_time_left(OFFERED_FOR_MS)

    def undo(self) -> None:
        copy = self._copy
        self.withdraw()
        if copy is None:
            return
        problem = restore(self._store, copy)
        if problem:
            self.failed.emit(problem)
        else:
            self.restored.emit(copy.conversation_id)

    def withdraw(self) -> None:
        """No more Undo (its time is up, or the chat moved on)."""
        self._copy = None
        self._timer.stop()
        self._ticker.stop()
        self.setVisible(False)
