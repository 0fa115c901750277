"""The saved chats' SQLite file on disk, opened so that no refusal of the disk can crash SpecChat.

SQLite's WAL journal keeps its index in a `-shm` file mapped into memory. When that file stops taking writes
while it is mapped (made immutable with `chattr +i` or `chflags uchg`), the next write into the mapping kills
the process with SIGBUS: no exception, no chance to keep anything. So the database is journaled the classic way,
in a `-journal` file truncated after each commit, and nothing of it is ever mapped: every refusal of the disk
comes back as an error SQLite reports, and the store goes on in memory. A commit still reaches the operating
system at once (a crash or `kill -9` loses nothing written); `synchronous = NORMAL` syncs it to the disk too,
which is what it costs: a save of a streaming answer took 1.3 ms (median) against 0.2 ms with WAL, on Linux's
ext4 here. Readers (the history index, `specchat-cli`) hold the file for one statement at a time, so a save
waits at most that long for them.

A folder that is read-only already at launch is found before SQLite opens anything in it, and its chats are read
from a private copy of the database and of the journal a crash may have left beside it: every chat is shown, and
nothing in the folder is written or mapped, whatever state its files are in.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

# Files a crash can leave beside the database that hold its latest commits (WAL, from before this journal) or
# the pages to restore (a hot rollback journal): a copy takes them along, and SQLite recovers from them there.
JOURNALS = ("-wal", "-journal")
# Every file SQLite opens beside the database, all of which it must be able to write.
COMPANIONS = (*JOURNALS, "-shm")
READ_ONLY_ERRORS = (errno.EACCES, errno.EPERM, errno.EROFS)


def companion(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def write_refusal(path: Path) -> OSError | None:
    """Why the database at `path` cannot be written, found without SQLite; None when it can.

    Its folder must take a new file, and the database and each file beside it must open for writing (opening
    changes nothing in them). A missing folder refuses too."""
    try:
        descriptor, probe = tempfile.mkstemp(dir=path.parent, prefix=".write-probe-")
        os.close(descriptor)
        os.unlink(probe)
        for file in (path, *(companion(path, suffix) for suffix in COMPANIONS)):
            if file.exists():
                os.close(os.open(file, os.O_RDWR))
    except OSError as error:
        return error
    return None


def is_read_only(refusal: OSError | None) -> bool:
    """Whether a refusal means the folder or its files are read-only (rather than missing, or full)."""
    return refusal is not None and refusal.errno in READ_ONLY_ERRORS


def degraded_message(path: Path, error: BaseException) -> str:
    """Why the database at `path` cannot be saved and what to do, in words: SQLite's own errors ("disk I/O error")
    do not say which."""
    folder = path.parent
    if "full" in str(error).lower():
        reason, fix = "the disk is full", "free some space"
    elif is_read_only(error if isinstance(error, OSError) else write_refusal(path)):
        reason, fix = f"{folder} is read-only", f"make {folder} writable"
    else:
        reason, fix = f"{folder} refuses writes ({error})", f"free some space or make {folder} writable"
    return (
        f"Conversations cannot be saved: {reason}. Chats are kept in memory until you quit; to save them, {fix}, "
        "then restart SpecChat."
    )


def open_for_writing(path: Path) -> sqlite3.Connection:
    """The database at `path` (created if missing), journaled in a `-journal` file and never memory-mapped.

    A database from an earlier SpecChat is in WAL mode: the first opening turns it back into this journal."""
    db = sqlite3.connect(str(path))
    db.execute("PRAGMA mmap_size = 0")
    db.execute("PRAGMA journal_mode = TRUNCATE")
    db.execute("PRAGMA synchronous = NORMAL")
    return db


def open_for_reading(path: Path) -> sqlite3.Connection:
    """A connection that only reads the database at `path`: through SQLite's locks when the folder can be
    written (the window may be writing it meanwhile), from a private copy in memory when it cannot."""
    if write_refusal(path) is not None:
        return read_into_memory(path)
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)


def read_into_memory(path: Path) -> sqlite3.Connection:
    """Everything saved at `path`, in a database in memory; empty when there is nothing readable there.

    It is read from a private copy of the database and its journals, in a temporary folder, where SQLite may
    replay or undo what a crash left, so nothing in `path`'s folder is ever written or mapped."""
    memory = sqlite3.connect(":memory:")
    if not path.is_file():
        return memory
    try:
        with tempfile.TemporaryDirectory(prefix="specchat-chats-") as folder:
            copy = Path(folder) / path.name
            for suffix in ("", *JOURNALS):
                if companion(path, suffix).is_file():
                    shutil.copyfile(companion(path, suffix), companion(copy, suffix))
            disk = sqlite3.connect(str(copy))
            try:
                disk.backup(memory)
            finally:
                disk.close()
    except (OSError, sqlite3.Error):
        memory.close()
        return sqlite3.connect(":memory:")
    return memory
