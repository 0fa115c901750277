"""Data folders in the states issue 22 found them: holding saved chats, left by a crash, read-only.

Read-only must hold for root, who runs the tests here, and `chmod` does not stop root. So the folder and its files
are made immutable instead: `chattr +i` on Linux, `chflags uchg` on macOS. Writing, creating or deleting then fails
in the kernel as in a read-only folder (EPERM where a user's read-only folder gives EACCES), and writing into a
memory mapping of such a file faults, as the issue saw. A file system without the flag (tmpfs, for one) skips
the test, saying why.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine.conversation_schema import SCHEMA
from engine.conversations import ConversationStore

ROOT = Path(__file__).resolve().parents[1]
LOCK, UNLOCK = (["chflags", "uchg"], ["chflags", "nouchg"]) if sys.platform == "darwin" else (["chattr", "+i"], ["chattr", "-i"])


@contextmanager
def read_only(folder: Path) -> Iterator[list[Path]]:
    """`folder` and every file in it immutable for the block (and writable again after, whatever happens); yields
    the files made so. Skips the test when the file system cannot make them immutable."""
    if shutil.which(LOCK[0]) is None:
        pytest.skip(f"{LOCK[0]} is not installed: cannot make a folder read-only for root")
    paths = [*sorted(p for p in folder.iterdir() if p.is_file()), folder]
    done = subprocess.run([*LOCK, *map(str, paths)], capture_output=True, text=True)
    try:
        if done.returncode != 0:
            pytest.skip(f"{' '.join(LOCK)} failed here: {done.stderr.strip()}")
        yield paths[:-1]
    finally:
        subprocess.run([*UNLOCK, *map(str, paths)], capture_output=True)


def snapshot(files: list[Path]) -> dict[str, bytes]:
    """Each file's bytes, to check a read-only folder came out as it went in."""
    return {file.name: file.read_bytes() for file in files}


def saved_chats_at(database: Path, count: int = 5) -> list[int]:
    """A database holding `count` chats ("Chat 0"...) of one question each, closed as the app closes it."""
    database.parent.mkdir(parents=True, exist_ok=True)
    store = ConversationStore(database)
    chats = [store.create(f"Chat {i}") for i in range(count)]
    for chat in chats:
        store.add_message(chat, "user", f"question {chat}")
    store.close()
    return chats


def crashed_wal_database(database: Path, count: int = 5) -> None:
    """What an earlier SpecChat (WAL journal) killed mid-session leaves: `count` chats ("Chat 0"... asking
    "question 1"...) only in `-wal`, and a `-shm` beside it."""
    database.parent.mkdir(parents=True, exist_ok=True)
    code = (
        "import os, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1])\n"
        "db.execute('PRAGMA journal_mode = WAL')\n"
        "db.executescript(sys.argv[2])\n"
        "for i in range(int(sys.argv[3])):\n"
        "    db.execute('INSERT INTO conversations (title, created, updated) VALUES (?, 0, ?)', (f'Chat {i}', i))\n"
        "    db.execute('INSERT INTO messages (conversation_id, position, role, content) VALUES (?, 0, ?, ?)',\n"
        "               (i + 1, 'user', f'question {i + 1}'))\n"
        "db.commit()\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(database), SCHEMA, str(count)], check=True)
    assert {p.name for p in database.parent.iterdir()} >= {database.name + "-wal", database.name + "-shm"}


def turned_read_only_mid_run(code: str, folder: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run Python `code` in a child process (from the repository's root), which prints "ready", then reads a line
    from stdin: meanwhile `folder` turns read-only. A crash only kills the child; its exit status tells."""
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert child.stdout.readline() == "ready\n", child.stderr.read()
        with read_only(folder):
            out, err = child.communicate("go\n", timeout=300)
    finally:
        child.kill()
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)
