"""Prompt prefixes spilled to disk: what the prompt cache's memory budget drops, kept in files for a later request.

An agent's prefixes outgrow any memory budget over a long session, and a restart loses them all. So an entry the
prompt cache evicts (`prompt_cache.py`) can be written to a file instead of thrown away, and a later prompt that
starts with it reads the file rather than the prompt: reading keys and values back costs a disk read, prefilling
them costs the model's passes over every token (docs/prompt-cache.md has the measured ratio).

- **Format.** One safetensors file per prefix, in mlx-lm's prompt-cache layout (each layer's keys and values,
  bit for bit) and read with `load_prompt_cache`. Its metadata holds the model's identity, the token ids
  and the images' fingerprint (`Shift`), so the folder can be indexed from the files' headers alone. The output
  after a restore is the one after a fresh read: the keys and values are the very ones the prefix's passes computed.
- **Identity.** Keys and values depend on the weights, the model's code and the arithmetic that ran it, so a file
  is filed under `model_identity`: the model folder's files (path, size, modification time), the versions of
  MLX, mlx-lm and mlx-vlm, and the device. Another model, an edited file, an upgrade: another identity, never a wrong hit.
- **Families.** Only plain `KVCache` layers are ever shelved (`CachedModel.fork`), so only they reach disk.
  Recurrent state, sliding windows and quantized keys keep the one live prefix they keep in memory.
- **Safety.** A file is written under a temporary name and renamed, so a crash leaves no half file under a real
  name (a leftover temporary is deleted later). A file that does not load, or loads as something other than its
  header promised (another identity, layer types or length), is deleted and the prompt read anew: never an error
  to the user. Flipped bits inside the tensors are not detected (there is no checksum: the disk's own does that).
- **Budget.** The files stay within `budget_bytes`, those being written counted; the least recently used go first
  (a hit touches its file). A prefix larger than the whole budget is not written.
- **Off the request's time.** A file is written by a writer thread (`prompt_cache_writer.py`) while the request
  that spilled it goes on; until it is written, it is listed as pending, and a prompt that wants it waits for it
  (`load`). Only the engine thread touches the index and deletes files; the writer thread only writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import time
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_unflatten
from mlx_lm.models.cache import load_prompt_cache

from ..models.app_paths import data_dir
from ..models.folder_files import folder_files
from ..models.loading import LoadedModel
from ..models.vision import ImageKey, Shift
from .cached_model import CachedModel, shared_prefix
from .prompt_cache_writer import SpillFile, SpillWriter, spill_file

FORMAT = 1  # written into every file: a later change of the layout makes older files unreadable, hence deleted
DEFAULT_DISK_MB = 0  # off: gigabytes written to a hidden folder are the user's to allow
DISK_HELP = ("disk space for prompt prefixes the memory budget drops, kept across restarts in the app-data folder "
             f"(default {DEFAULT_DISK_MB}: off)")
SUFFIX = ".safetensors"
TEMPORARY = ".tmp"  # a file being written; one older than STALE_SECONDS was left by a crash
STALE_SECONDS = 3600
MAX_HEADER = 64 << 20  # a header longer than this is no header of ours


def folder() -> Path:
    """Where spilled prefixes are kept: the app-data folder's cache (docs/prompt-cache.md)."""
    return data_dir() / "cache" / "prompts"


def model_identity(model: LoadedModel) -> str | None:
    """What a model's keys and values are a function of besides the ids: its files, the code and arithmetic that ran
    them. None for a model without a folder (nothing on disk can be told apart from it)."""
    try:
        files = [[f.name, f.size, f.mtime_ns] for f in folder_files(model.path)]
    except OSError:
        return None
    made_by = [str(model.path.resolve()), files, _versions(), str(mx.default_device())]
    return hashlib.sha256(json.dumps(made_by).encode()).hexdigest()


@cache
def _versions() -> tuple[str, ...]:
    """The versions of the code that computes keys and values: MLX, mlx-lm, and mlx-vlm (a vision target's). Read once
    a process: the code that runs cannot change under it, and each read parses three packages' metadata (1.5 ms),
    at every model identity."""
    found = []
    for package in ("mlx", "mlx-lm", "mlx-vlm"):
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} absent")
    return tuple(found)


@dataclass
class Spilled:
    """A prefix on disk, as its header describes it (the tensors stay in the file until it is taken back)."""

    path: Path
    identity: str
    tokens: list[int]
    images: Shift | None
    layers: list[str]  # each layer's cache type

    def shared_with(self, prompt: list[int], images: ImageKey | None) -> int:
        return shared_prefix(self.tokens, self.images, prompt, images)

    def holds(self, tokens: list[int], images: Shift | None) -> bool:
        """Whether this file holds all that keys and values of `tokens` showing `images` do (another image's
        positions are other states)."""
        return self.shared_with(tokens, images.key if images is not None else None) == len(tokens)


@dataclass
class Pending:
    """A file the writer thread has yet to write (or the engine thread to take note of): its entry, what it writes
    (kept until noted, so that the arrays it views are released on the engine thread), and whether it was written."""

    entry: Spilled
    spill: SpillFile
    written: Future[bool]


class DiskCache:
    """Spilled prefixes in a folder, within a byte budget, least recently used going first.

    The folder is listed again before each lookup (cheap: a file's header is read once), so files another process
    wrote or removed are seen.

    Args:
        path: the folder (created on first write).
        budget_bytes: the most the files may take.

    Attributes:
        writes, hits: prefixes written, and taken back (for tests and the benchmark).
    """

    def __init__(self, path: Path, budget_bytes: int) -> None:
        self.path = path
        self.budget_bytes = budget_bytes
        self._index: dict[str, Spilled | None] = {}  # by file name; None: not ours, or unreadable (deleted)
        self._pending: list[Pending] = []  # in the order they were handed to the writer
        self._writer = SpillWriter()
        self.writes = self.hits = 0

    def entries(self) -> list[Spilled]:
        """The prefixes on disk now, and those being written."""
        self._settle()
        self._refresh()
        return self._on_disk() + [p.entry for p in self._pending]

    @property
    def nbytes(self) -> int:
        """Bytes the files take (those being written: what they will take)."""
        return sum(_size(e.path) for e in self._on_disk()) + sum(p.spill.nbytes for p in self._pending)

    def best(self, cache: CachedModel, prompt: list[int], images: ImageKey | None) -> tuple[Spilled | None, int]:
        """The file of `cache`'s model sharing the most with a prompt, and how many tokens it shares."""
        kinds = [type(layer).__name__ for layer in cache.cache]
        mine = [e for e in self.entries() if cache.identity and e.identity == cache.identity and e.layers == kinds]
        shares = [(e, min(e.shared_with(prompt, images), len(prompt) - 1)) for e in mine]
        return max(shares, key=lambda s: s[1], default=(None, 0))

    def load(self, entry: Spilled, owner: CachedModel) -> CachedModel | None:
        """A twin of `owner` holding the file's prefix, for `owner.adopt` (a file still being written first
        waited for); None (and the file deleted) if it does not load as its header promised."""
        twin = owner.fork(0)
        if twin is None:
            return None  # not a plain KV cache (best() offers such a cache no file)
        self._wait_for(entry)
        try:
            layers, meta = load_prompt_cache(str(entry.path), return_metadata=True)
            mx.eval([layer.state for layer in layers])
            if _describe(meta, layers, entry.path) != entry:
                raise ValueError("the file is not what its header said")
        except Exception:  # noqa: BLE001  # whatever is wrong with a cache file, the prompt is read anew
            self._delete(entry.path)
            return None
        twin.cache, twin.tokens, twin.images = layers, list(entry.tokens), entry.images
        _touch(entry.path)  # used now: the last to go
        self.hits += 1
        return twin

    def write(self, twin: CachedModel) -> None:
        """Have a shelved prefix written to disk (unless a file holds it already, or it would not fit), making room
        for it first; the request goes on while the writer thread writes it."""
        if twin.identity is None or not all(layer.keys is not None for layer in twin.cache):
            return
        holder = next((e for e in self.entries() if e.identity == twin.identity and e.holds(twin.tokens, twin.images)), None)
        if holder is not None:
            _touch(holder.path)
            return
        images = [twin.images.start, twin.images.delta, twin.images.images] if twin.images is not None else None
        header = {"format": FORMAT, "identity": twin.identity, "tokens": twin.tokens, "images": images}
        metadata = json.dumps(header)
        spill = spill_file(twin.cache, {"specchat": metadata})
        if spill is None or spill.nbytes > self.budget_bytes:
            return
        self._evict(room=spill.nbytes)
        name = hashlib.sha256(metadata.encode()).hexdigest()[:32] + SUFFIX
        entry = _entry(self.path / name, json.loads(metadata), [type(layer).__name__ for layer in twin.cache])
        written = self._writer.submit(spill, entry.path, self.path / f".{name}.{os.getpid()}{TEMPORARY}")
        self._pending.append(Pending(entry, spill, written))

    def flush(self) -> None:
        """Wait for every file being written (before the process ends, and for tests)."""
        for pending in list(self._pending):
            pending.written.result()
        self._settle()

    def close(self) -> None:
        """Write what is being written, and end the writer thread."""
        self.flush()
        self._writer.close()

    def _wait_for(self, entry: Spilled) -> None:
        """If `entry`'s file is being written, wait until it is (or the disk refused it)."""
        pending = next((p for p in self._pending if p.entry.path == entry.path), None)
        if pending is not None:
            pending.written.result()
            self._settle()

    def _settle(self) -> None:
        """Take note of the files written since (in the order they were written): index each, and delete the files
        of its model it holds all of."""
        while self._pending and self._pending[0].written.done():
            done = self._pending.pop(0)
            new = self._read(done.entry.path) if done.written.result() else None
            if new is None:
                continue  # the disk refused it: the prefix is simply not kept
            self.writes += 1
            for dominated in [e for e in self._on_disk() if e.identity == new.identity and e.path != new.path
                              and new.holds(e.tokens, e.images)]:
                self._delete(dominated.path)

    def _on_disk(self) -> list[Spilled]:
        """The indexed files, not those being written (one the writer just renamed is still pending until noted)."""
        pending = {p.entry.path.name for p in self._pending}
        return [e for name, e in self._index.items() if e is not None and name not in pending]

    def _evict(self, room: int) -> None:
        """Delete the least recently used files until the rest, those being written and `room` fit the budget.

        A file still being written cannot be deleted yet: when deleting every written file is not room enough (many
        prefixes spilled at once, as when the pair is let go), wait for the oldest write and delete its file, so
        the budget holds however far behind the writer thread is."""
        while True:
            files = sorted(self._on_disk(), key=lambda e: _mtime(e.path))
            total = self.nbytes + room
            while files and total > self.budget_bytes:
                gone = files.pop(0)
                total -= _size(gone.path)
                self._delete(gone.path)
            if total <= self.budget_bytes or not self._pending:
                return
            self._pending[0].written.result()
            self._settle()

    def _refresh(self) -> None:
        """Index the folder's files: new ones by their header, gone ones forgotten, stale temporaries deleted."""
        try:
            names = {p.name: p for p in self.path.iterdir()}
        except OSError:
            names = {}
        for name in [n for n in self._index if n not in names]:
            del self._index[name]
        for name, path in names.items():
            if name.endswith(TEMPORARY):
                if time.time() - _mtime(path) > STALE_SECONDS:
                    self._delete(path)
            elif name.endswith(SUFFIX) and name not in self._index:
                self._index[name] = self._read(path)

    def _read(self, path: Path) -> Spilled | None:
        """A file's entry from its header alone; an unreadable file is deleted."""
        try:
            with open(path, "rb") as f:
                (length,) = struct.unpack("<Q", f.read(8))
                if length > MAX_HEADER:
                    raise ValueError("no safetensors header")
                meta = json.loads(f.read(length))["__metadata__"]
            metadata, classes, _ = tree_unflatten(list(meta.items()))
            entry = _entry(path, json.loads(metadata["specchat"]), classes)
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001  # a torn, foreign or older file: of no use
            self._delete(path)
            return None
        self._index[path.name] = entry
        return entry

    def _delete(self, path: Path) -> None:
        _remove(path)
        self._index.pop(path.name, None)


def _entry(path: Path, header: dict, classes: list[str]) -> Spilled:
    """The entry a file's header describes (ValueError for a header of another format)."""
    if header.get("format") != FORMAT:
        raise ValueError(f"format {header.get('format')}, not {FORMAT}")
    images = Shift(*header["images"]) if header["images"] is not None else None
    return Spilled(path, str(header["identity"]), [int(t) for t in header["tokens"]], images, list(classes))


def _describe(meta: dict, layers: list, path: Path) -> Spilled:
    """What a loaded file holds, to check against its header: its entry, if every layer holds all its tokens."""
    entry = _entry(path, json.loads(meta["specchat"]), [type(layer).__name__ for layer in layers])
    if any(layer.offset != len(entry.tokens) or layer.keys.shape[2] != len(entry.tokens) for layer in layers):
        raise ValueError("a layer holds another number of positions than the file has tokens")
    return entry


def _remove(path: Path) -> None:
    """Delete a file if it can be (one that cannot is left for the next try)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def _touch(path: Path) -> None:
    """Mark a file used now (the last the budget deletes)."""
    try:
        os.utime(path)
    except OSError:
        pass  # gone meanwhile (another process's budget): nothing to keep


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
