"""The conversations database's tables, and how a file an older SpecChat saved is brought up to them.

Each migration adds a column the file lacks; the one that brought branches also chains each conversation's
messages in the order they were written, so that an old chat reads as it did. The store (`conversations.py`)
runs `prepare_tables` on every database it opens, on disk or in memory.
"""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    system_prompt TEXT NOT NULL DEFAULT '',
    think INTEGER
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    runs TEXT NOT NULL DEFAULT '[]',
    summary TEXT NOT NULL DEFAULT '',
    finish TEXT NOT NULL DEFAULT '',
    parent_id INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    selected INTEGER NOT NULL DEFAULT 1,
    trace TEXT NOT NULL DEFAULT '[]',
    reasoning TEXT NOT NULL DEFAULT '',
    reasoning_s REAL NOT NULL DEFAULT 0,
    attachments TEXT NOT NULL DEFAULT '[]',
    tool_calls TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, position);
"""
# Databases from before branches: add the columns, and chain each conversation's messages in order. From before
# thinking models: answers get their reasoning apart, chats their own Think switch (NULL: the Settings default).
# From before attachments: questions get their files' texts. From before MCP tools: answers get their calls.
MIGRATIONS = (
    ("conversations", "system_prompt", "ALTER TABLE conversations ADD COLUMN system_prompt TEXT NOT NULL DEFAULT ''"),
    ("messages", "parent_id", "ALTER TABLE messages ADD COLUMN parent_id INTEGER REFERENCES messages(id) ON DELETE CASCADE"),
    ("messages", "selected", "ALTER TABLE messages ADD COLUMN selected INTEGER NOT NULL DEFAULT 1"),
    ("messages", "trace", "ALTER TABLE messages ADD COLUMN trace TEXT NOT NULL DEFAULT '[]'"),
    ("messages", "reasoning", "ALTER TABLE messages ADD COLUMN reasoning TEXT NOT NULL DEFAULT ''"),
    ("messages", "reasoning_s", "ALTER TABLE messages ADD COLUMN reasoning_s REAL NOT NULL DEFAULT 0"),
    ("conversations", "think", "ALTER TABLE conversations ADD COLUMN think INTEGER"),
    ("messages", "attachments", "ALTER TABLE messages ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]'"),
    ("messages", "tool_calls", "ALTER TABLE messages ADD COLUMN tool_calls TEXT NOT NULL DEFAULT '{}'"),
)


def prepare_tables(db: sqlite3.Connection) -> None:
    """Create what a new file lacks and migrate an older one, in one commit (foreign keys on: deletes cascade)."""
    db.execute("PRAGMA foreign_keys = ON")
    db.executescript(SCHEMA)
    _migrate(db)
    db.commit()


def _migrate(db: sqlite3.Connection) -> None:
    for table, column, statement in MIGRATIONS:
        if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
            db.execute(statement)
            if column == "parent_id":
                db.execute(
                    "UPDATE messages SET parent_id = (SELECT p.id FROM messages p WHERE p.conversation_id = "
                    "messages.conversation_id AND p.position < messages.position ORDER BY p.position DESC LIMIT 1)"
                )
