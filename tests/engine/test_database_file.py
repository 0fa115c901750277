"""Opening the saved chats' database: whether its folder takes writes, and reading one that does not from a copy,
with what a crash left beside it. Read-only: see tests/data_folders.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.database_file import is_read_only, open_for_reading, read_into_memory, write_refusal
from tests.data_folders import read_only, saved_chats_at, snapshot


def test_a_writable_folder_is_told_from_a_read_only_or_missing_one_and_probing_leaves_nothing(tmp_path: Path) -> None:
    database = tmp_path / "data" / "c.sqlite3"
    saved_chats_at(database)
    files = sorted(database.parent.iterdir())
    assert write_refusal(database) is None and sorted(database.parent.iterdir()) == files
    with read_only(database.parent):
        assert is_read_only(write_refusal(database))
    missing = write_refusal(tmp_path / "nowhere" / "c.sqlite3")
    assert missing is not None and not is_read_only(missing)


def test_a_crash_mid_commit_in_a_read_only_folder_reads_as_before_the_commit(tmp_path: Path) -> None:
    """A crash mid-commit leaves the database half written and the pages to restore in a hot `-journal`; read in
    place without writing, SQLite cannot restore them. The copy takes the journal along and is restored."""
    database = tmp_path / "data" / "c.sqlite3"
    saved_chats_at(database)
    code = (
        "import os, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1]); db.execute('PRAGMA journal_mode = TRUNCATE'); db.execute('PRAGMA cache_size = 1')\n"
        "db.execute('BEGIN')\n"
        "db.execute('UPDATE messages SET content = ?', ('overwritten',))\n"
        "db.executemany('INSERT INTO conversations (title, created, updated) VALUES (?, 0, 0)', [('x' * 5000,)] * 200)\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(database)], check=True)
    assert (database.parent / "c.sqlite3-journal").stat().st_size > 0  # hot: the crash left pages to restore
    with read_only(database.parent) as files:
        before = snapshot(files)
        memory = read_into_memory(database)
        assert [row[0] for row in memory.execute("SELECT content FROM messages ORDER BY id")] == [
            f"question {i}" for i in range(1, 6)
        ]
        assert memory.execute("SELECT COUNT(*) FROM conversations").fetchone() == (5,)
        assert open_for_reading(database).execute("SELECT COUNT(*) FROM conversations").fetchone() == (5,)
        assert snapshot(files) == before
