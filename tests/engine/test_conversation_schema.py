"""The conversations database's tables: created in a new file, added column by column to an older one, and
prepared again without change."""

from __future__ import annotations

import sqlite3

from engine.conversation_schema import MIGRATIONS, prepare_tables

# The tables as the first SpecChat wrote them: before branches, and every column added since.
BEFORE_BRANCHES = (
    "CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL);"
    "CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL, position INTEGER NOT NULL, "
    "role TEXT NOT NULL, content TEXT NOT NULL, runs TEXT NOT NULL DEFAULT '[]', summary TEXT NOT NULL DEFAULT '', "
    "finish TEXT NOT NULL DEFAULT '');"
)


def columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def test_a_new_database_gets_every_table_and_column() -> None:
    db = sqlite3.connect(":memory:")
    prepare_tables(db)
    for table, column, _ in MIGRATIONS:
        assert column in columns(db, table)
    assert db.execute("PRAGMA foreign_keys").fetchone() == (1,)


def test_an_old_database_gains_the_missing_columns_and_its_messages_are_chained_in_order() -> None:
    db = sqlite3.connect(":memory:")
    db.executescript(
        BEFORE_BRANCHES + "INSERT INTO conversations VALUES (1, 'Old', 0, 0);"
        "INSERT INTO messages (id, conversation_id, position, role, content) VALUES (7, 1, 0, 'user', 'a'), "
        "(8, 1, 1, 'assistant', 'b'), (9, 1, 2, 'user', 'c');"
    )
    prepare_tables(db)
    for table, column, _ in MIGRATIONS:
        assert column in columns(db, table)
    assert db.execute("SELECT id, parent_id FROM messages ORDER BY id").fetchall() == [(7, None), (8, 7), (9, 8)]


def test_preparing_a_current_database_again_changes_nothing() -> None:
    db = sqlite3.connect(":memory:")
    prepare_tables(db)
    db.execute("INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Kept', 0, 0)")
    db.commit()
    before = {table: columns(db, table) for table in ("conversations", "messages")}
    prepare_tables(db)
    assert {table: columns(db, table) for table in ("conversations", "messages")} == before
    assert db.execute("SELECT title FROM conversations").fetchall() == [("Kept",)]
