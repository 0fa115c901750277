"""Saved conversations: SQLite in the app-data folder.

Every write commits at once, and an answer is saved while it streams (the window saves it every second or
so), so Stop, a crash or a power cut keeps what was generated up to then.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    runs TEXT NOT NULL DEFAULT '[]',
    summary TEXT NOT NULL DEFAULT '',
    finish TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, position);
"""


@dataclass
class StoredMessage:
    """One message as saved.

    Attributes:
        role: "user" or "assistant".
        content: the text.
        runs: for answers, each token's [text, origin, round] (to show the coloured view again).
        summary: the answer's stats line.
        finish: how generation ended ("stop", "length", "cancelled", ...; "" while streaming or for users).
    """

    id: int
    role: str
    content: str
    runs: list[list] = field(default_factory=list)
    summary: str = ""
    finish: str = ""


@dataclass
class ConversationInfo:
    id: int
    title: str
    updated: float


class ConversationStore:
    """The conversations database.

    Args:
        path: the SQLite file (created if missing).
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path))
        self.db.execute("PRAGMA foreign_keys = ON")
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.executescript(SCHEMA)
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    def create(self, title: str = "New chat") -> int:
        now = time.time()
        cursor = self.db.execute("INSERT INTO conversations (title, created, updated) VALUES (?, ?, ?)", (title, now, now))
        self.db.commit()
        return int(cursor.lastrowid)

    def conversations(self) -> list[ConversationInfo]:
        """All conversations, most recently updated first."""
        rows = self.db.execute("SELECT id, title, updated FROM conversations ORDER BY updated DESC, id DESC")
        return [ConversationInfo(*row) for row in rows]

    def title(self, conversation_id: int) -> str:
        row = self.db.execute("SELECT title FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        return row[0] if row else ""

    def rename(self, conversation_id: int, title: str) -> None:
        self.db.execute("UPDATE conversations SET title = ? WHERE id = ?", (title.strip() or "Untitled", conversation_id))
        self.db.commit()

    def delete(self, conversation_id: int) -> None:
        self.db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
        self.db.commit()

    def messages(self, conversation_id: int) -> list[StoredMessage]:
        rows = self.db.execute(
            "SELECT id, role, content, runs, summary, finish FROM messages WHERE conversation_id = ? ORDER BY position",
            (conversation_id,),
        )
        return [StoredMessage(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]

    def add_message(self, conversation_id: int, role: str, content: str) -> int:
        (position,) = self.db.execute(
            "SELECT COALESCE(MAX(position), -1) + 1 FROM messages WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()
        cursor = self.db.execute(
            "INSERT INTO messages (conversation_id, position, role, content) VALUES (?, ?, ?, ?)",
            (conversation_id, position, role, content),
        )
        self._touch(conversation_id)
        return int(cursor.lastrowid)

    def update_message(
        self, message_id: int, content: str, runs: list[list] | None = None, summary: str = "", finish: str = ""
    ) -> None:
        self.db.execute(
            "UPDATE messages SET content = ?, runs = ?, summary = ?, finish = ? WHERE id = ?",
            (content, json.dumps(runs or [], ensure_ascii=False), summary, finish, message_id),
        )
        row = self.db.execute("SELECT conversation_id FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row:
            self._touch(row[0])

    def delete_message(self, message_id: int) -> None:
        self.db.execute("DELETE FROM messages WHERE id = ?", (message_id,))
        self.db.commit()

    def _touch(self, conversation_id: int) -> None:
        self.db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (time.time(), conversation_id))
        self.db.commit()

    def export_markdown(self, conversation_id: int) -> str:
        """The conversation as Markdown: a heading, then each message under its speaker."""
        lines = [f"# {self.title(conversation_id)}", ""]
        for message in self.messages(conversation_id):
            speaker = "You" if message.role == "user" else "Assistant"
            lines += [f"**{speaker}:**", "", message.content.rstrip(), ""]
            if message.summary:
                lines += [f"*{message.summary}*", ""]
        return "\n".join(lines).rstrip() + "\n"
