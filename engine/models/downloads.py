"""Downloading models from the Hugging Face hub into the standard HF cache, with progress, cancel and resume.

The HF cache is shared with mlx-lm and other tools, so a model is never downloaded twice. We fetch only what a
model needs (weights, config, tokenizer, chat template) and keep the cache's own layout: each file is a blob
named by its ETag, linked from the commit's snapshot folder, with refs/main naming the commit.

huggingface_hub's `hf_hub_download` no longer resumes across runs (it deletes its per-process temporary file
on failure), so the transfer itself is ours, built from huggingface_hub's public pieces (`hf_hub_url`,
`get_hf_file_metadata`, `http_get` with its `resume_size`): bytes go to `blobs/<etag>.partial` under a file
lock, which is renamed to the blob when complete and only then linked into the snapshot. A cancelled or
interrupted download therefore leaves nothing a later load could trip on, and the next one resumes from the
partial file with an HTTP Range request.

Progress arrives through huggingface_hub's `tqdm_class` hook: our counter adds the bytes, works out speed and
time left, reports them, and raises `DownloadCancelled` from inside the transfer when asked to stop. Chunks are
small enough that a cancel lands within a second. Every failure becomes one sentence that says what happened
and what to do.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import importlib.util
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DownloadCancelled, DownloadError, ModelNotFoundError, NotAModelError, UnsupportedModelError
from ..recent_rate import RecentRate
from ..time_left import duration_text, seconds_left
from .app_paths import hub_cache_dir, hub_endpoint, offline
from .loading import MODEL_FILE_PATTERNS, cached_repo_path

CHUNK_BYTES = 256 * 1024  # progress (and cancel) granularity
REPORT_INTERVAL_S = 0.1
SPEED_WINDOW_S = 3.0


@dataclass(frozen=True)
class DownloadProgress:
    """Where a download stands.

    Attributes:
        repo_id: the model.
        file: the file being transferred now.
        done_bytes, total_bytes: over all files of the model (already cached files count as done).
        bytes_per_s: recent transfer speed.
    """

    repo_id: str
    file: str
    done_bytes: int
    total_bytes: int
    bytes_per_s: float

    @property
    def fraction(self) -> float:
        return self.done_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def seconds_left(self) -> float | None:
        return seconds_left(self.done_bytes, self.total_bytes, self.bytes_per_s)

    def describe(self) -> str:
        """'1.2 GB of 4.3 GB, 35.0 MB/s, 1 min 29 s left'."""
        left = self.seconds_left
        eta = "" if left is None else f", {duration_text(left)} left"
        return f"{_size(self.done_bytes)} of {_size(self.total_bytes)}, {_size(self.bytes_per_s)}/s{eta}"


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


ProgressCallback = Callable[[DownloadProgress], None]
Cancel = Callable[[], bool]


class _Tracker:
    """Counts bytes across the files of one model download and reports them, throttled."""

    def __init__(self, repo_id: str, total: int, done: int, report: ProgressCallback | None, cancel: Cancel) -> None:
        self.repo_id, self.total, self.done = repo_id, total, done
        self.report, self.cancel = report, cancel
        self.file = ""
        self._last_report = 0.0
        self._speed = RecentRate(SPEED_WINDOW_S)
        self._speed.add(time.monotonic(), done)

    def add(self, n: int) -> None:
        if self.cancel():
            raise DownloadCancelled(f"Download of {self.repo_id} cancelled; it resumes where it stopped next time.")
        self.done += n
        now = time.monotonic()
        self._speed.add(now, self.done)
        if self.report and now - self._last_report >= REPORT_INTERVAL_S:
            self._last_report = now
            self.emit()

    def skip(self, n: int) -> None:
        """Count bytes that were already on disk (a resumed partial file, a blob another snapshot has): done,
        but not transferred now, so the speed is measured afresh from here."""
        self.done += n
        self._speed = RecentRate(SPEED_WINDOW_S)
        self._speed.add(time.monotonic(), self.done)

    def speed(self) -> float:
        return self._speed.per_second() or 0.0

    def emit(self) -> None:
        if self.report:
            self.report(DownloadProgress(self.repo_id, self.file, self.done, self.total, self.speed()))


class _ByteCounter:
    """What huggingface_hub takes as its `tqdm_class`: it only needs update(), close() and a context.

    Its `initial` (what a resumed file already has on disk) is not counted here: `_fetch_file` has counted
    it already, with `_Tracker.skip`.
    """

    def __init__(self, tracker: _Tracker, *args: Any, **kwargs: Any) -> None:
        self.tracker = tracker

    def update(self, n: int = 1) -> None:
        self.tracker.add(n)

    def close(self) -> None:
        pass

    def __enter__(self) -> _ByteCounter:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def needed_files(filenames: list[str]) -> list[str]:
    """The files mlx-lm reads, as its own downloader selects them."""
    return [f for f in filenames if any(fnmatch.fnmatch(f, pattern) for pattern in MODEL_FILE_PATTERNS)]


def check_mlx_model_files(repo_id: str, filenames: list[str]) -> None:
    """Refuse a repo that is not an MLX model, naming what is missing and what to look for instead."""
    missing = []
    if "config.json" not in filenames:
        missing.append("config.json")
    if not any(fnmatch.fnmatch(f, "model*.safetensors") for f in filenames):
        missing.append("model*.safetensors weights")
    if not missing:
        return
    hint = "Look for an MLX conversion (e.g. on huggingface.co/mlx-community)."
    if any(f.endswith(".gguf") for f in filenames):
        hint = "It holds GGUF files: download one and open it as a file, or look for an MLX conversion."
    elif any(f.endswith((".bin", ".pt", ".pth")) for f in filenames):
        hint = "It holds PyTorch weights; look for an MLX conversion (e.g. on huggingface.co/mlx-community)."
    raise NotAModelError(f"{repo_id} is not an MLX model: it has no {' and no '.join(missing)}. {hint}")


def check_architecture(repo_id: str, config_path: Path) -> None:
    """Refuse a model type this mlx-lm has no implementation for, before its weights are downloaded."""
    from mlx_lm.utils import MODEL_REMAPPING

    config = json.loads(config_path.read_text())
    model_type = config.get("model_type", "")
    module = MODEL_REMAPPING.get(model_type, model_type)
    if not model_type or importlib.util.find_spec(f"mlx_lm.models.{module}") is None:
        raise UnsupportedModelError(
            f"{repo_id} is a {model_type or 'unknown'!r} model, which this mlx-lm cannot run. "
            "Pick another model, or update mlx-lm."
        )


def _translate(repo_id: str, error: BaseException, needed_bytes: int) -> Exception:
    """A hub or network failure as one actionable sentence."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    if isinstance(error, GatedRepoError):
        return DownloadError(
            f"{repo_id} is gated: accept its terms on huggingface.co/{repo_id}, then log in with "
            "`hf auth login` (or set HF_TOKEN) and download again."
        )
    if isinstance(error, RepositoryNotFoundError):
        return ModelNotFoundError(f"There is no model {repo_id} on the Hugging Face hub: check the name.")
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return DownloadError(
            f"The disk is full: {repo_id} needs about {_size(needed_bytes)} more. Free some space and download "
            "again; it resumes where it stopped."
        )
    if isinstance(error, (OfflineModeIsEnabled, LocalEntryNotFoundError)) or _is_network_error(error):
        return DownloadError(
            f"Cannot reach the Hugging Face hub to download {repo_id}. Check the internet connection, or use "
            "models already on this machine."
        )
    if isinstance(error, HfHubHTTPError):
        return DownloadError(f"The hub refused the download of {repo_id}: {error}. Try again later.")
    return DownloadError(f"Downloading {repo_id} failed: {error}.")


def _is_network_error(error: BaseException) -> bool:
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & {"ConnectError", "ConnectTimeout", "TimeoutException", "NetworkError", "ConnectionError"})


def _repo_dir(cache_dir: Path, repo_id: str) -> Path:
    return cache_dir / f"models--{repo_id.replace('/', '--')}"


def _snapshot_file(cache_dir: Path, repo_id: str, revision: str, file: str) -> Path:
    return _repo_dir(cache_dir, repo_id) / "snapshots" / revision / file


def _fetch_file(repo_id: str, file: str, cache_dir: Path, endpoint: str, tracker: _Tracker) -> Path:
    """One file into the cache, resuming a partial blob; returns its path in the snapshot folder."""
    from filelock import FileLock
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers

    headers = build_hf_headers()
    meta = get_hf_file_metadata(hf_hub_url(repo_id, file, endpoint=endpoint), headers=headers)
    if not meta.etag or not meta.commit_hash:
        raise DownloadError(f"The hub sent no version information for {repo_id}/{file}. Try again later.")
    repo_dir = _repo_dir(cache_dir, repo_id)
    blob = repo_dir / "blobs" / meta.etag
    pointer = repo_dir / "snapshots" / meta.commit_hash / file
    blob.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(blob) + ".lock"):
        if not blob.exists():
            partial = blob.with_name(blob.name + ".partial")
            resume = partial.stat().st_size if partial.exists() else 0
            tracker.skip(resume)
            with open(partial, "ab") as out:
                http_get(
                    meta.location,
                    out,
                    resume_size=resume,
                    headers=headers,
                    expected_size=meta.size,
                    tqdm_class=functools.partial(_ByteCounter, tracker),  # type: ignore[arg-type]  # a partial of a tqdm class
                )
            partial.replace(blob)
        elif not pointer.exists():
            tracker.skip(blob.stat().st_size)
    pointer.parent.mkdir(parents=True, exist_ok=True)
    if not pointer.exists():
        link = pointer.with_name(pointer.name + ".link")
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(blob, pointer.parent))
        link.replace(pointer)
    ref = repo_dir / "refs" / "main"
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text(meta.commit_hash)
    return pointer


@dataclass(frozen=True)
class _Plan:
    """What a download will fetch: the files a model needs, in order, their sizes, and which are cached."""

    revision: str
    files: list[str]
    sizes: dict[str, int]
    have: set[str]

    @property
    def total(self) -> int:
        return sum(self.sizes[f] for f in self.files)

    @property
    def done(self) -> int:
        return sum(self.sizes[f] for f in self.have)


def _plan(repo_id: str, cache_dir: Path, endpoint: str) -> _Plan:
    """Ask the hub for the repo's files; refuse what is not an MLX model; note what the cache has."""
    from huggingface_hub import HfApi

    info = HfApi(endpoint=endpoint).model_info(repo_id, files_metadata=True)
    sizes = {s.rfilename: int(s.size or 0) for s in info.siblings or []}
    check_mlx_model_files(repo_id, list(sizes))
    files = needed_files(list(sizes))
    # config.json first: a model mlx-lm cannot run is refused before gigabytes of weights arrive.
    files.sort(key=lambda f: (f != "config.json", f.endswith(".safetensors"), f))
    revision = info.sha or "main"
    have = {f for f in files if _snapshot_file(cache_dir, repo_id, revision, f).exists()}
    return _Plan(revision, files, sizes, have)


def download_model(
    repo_id: str,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
    allow_network: bool | None = None,
) -> Path:
    """Make a hub model available in the HF cache and return its local folder.

    Args:
        repo_id: e.g. "mlx-community/Qwen2.5-0.5B-Instruct-4bit".
        progress: called with `DownloadProgress` about ten times a second, and once at the end.
        cancel: polled during the transfer; returning True raises `DownloadCancelled` within a second.
        allow_network: False uses only what is cached (offline mode); None follows $HF_HUB_OFFLINE.

    Raises:
        DownloadCancelled, DownloadError, ModelNotFoundError, NotAModelError, UnsupportedModelError.
    """
    from huggingface_hub import constants as hub_constants

    if allow_network is None:
        allow_network = not offline()
    if not allow_network:
        cached = cached_repo_path(repo_id)
        if cached is None:
            raise DownloadError(f"{repo_id} is not downloaded, and SpecChat is offline. Connect and download it first.")
        return cached

    cache_dir, endpoint = hub_cache_dir(), hub_endpoint()
    hub_constants.DOWNLOAD_CHUNK_SIZE = CHUNK_BYTES
    needed_bytes = 0
    try:
        plan = _plan(repo_id, cache_dir, endpoint)
        needed_bytes = plan.total - plan.done
        if needed_bytes > shutil.disk_usage(_existing_parent(cache_dir)).free:
            raise OSError(errno.ENOSPC, "not enough space")
        return _fetch_missing(repo_id, plan, cache_dir, endpoint, _Tracker(repo_id, plan.total, plan.done, progress, cancel or (lambda: False)))
    except (DownloadCancelled, DownloadError, NotAModelError, UnsupportedModelError, ModelNotFoundError):
        raise
    except Exception as error:
        raise _translate(repo_id, error, needed_bytes) from error


def _fetch_missing(repo_id: str, plan: _Plan, cache_dir: Path, endpoint: str, tracker: _Tracker) -> Path:
    """Transfer the files the cache lacks, checking the architecture as soon as config.json is in; the folder."""
    folder = _snapshot_file(cache_dir, repo_id, plan.revision, "config.json").parent
    for file in plan.files:
        if file in plan.have:
            continue
        tracker.file = file
        path = _fetch_file(repo_id, file, cache_dir, endpoint, tracker)
        folder = path.parents[file.count("/")]
        if file == "config.json":
            check_architecture(repo_id, path)
    tracker.done = plan.total
    tracker.emit()
    return folder


def _existing_parent(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path
