"""A model folder as its files are now: each file's name, size and modification time.

What a model computes depends on its folder's files, so what is kept across launches about a model is filed
under a key made from this listing, and a file replaced, edited or added makes another key: the draft policy's
measurements (`decoding/policy/memory.py`: a readable key of the folder's total size and latest change) and the
prompt prefixes spilled to disk (`decoding/prompt_cache_disk.py`: a hash of every file, with the code and the device
that computed the keys and values). Each key says what it needs; they read the folder the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FolderFile:
    """One file of a folder: its name, size in bytes and modification time (ns)."""

    name: str
    size: int
    mtime_ns: int


def folder_files(folder: Path) -> list[FolderFile]:
    """The files directly in `folder` (resolved: a link names the folder it points to), by name; OSError if it
    cannot be listed."""
    files = []
    for path in Path(folder).resolve().iterdir():
        if path.is_file():
            stat = path.stat()
            files.append(FolderFile(path.name, stat.st_size, stat.st_mtime_ns))
    return sorted(files, key=lambda f: f.name)
