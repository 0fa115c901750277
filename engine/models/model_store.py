"""The models on this machine: the HF cache, LM Studio's folder, and models the user opened from elsewhere.

The HF cache is listed and cleaned through huggingface_hub (so mlx-lm and other tools keep agreeing with
it). Folders and GGUF files the user opens are remembered in `models.json` in the app-data folder, so they
are offered again next time.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelNotFoundError, NotAChatModelError, NotAModelError, SpecChatError
from .app_paths import data_dir, hub_cache_dir
from .base_model import is_base_model
from .draft_choice import folder_drafter
from .loading import check_model_path
from .vision import sees_images

LM_STUDIO_FOLDERS = (Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models")


@dataclass(frozen=True)
class LocalModel:
    """A model found on disk.

    Attributes:
        name: what to load it by (a repo id for the HF cache, else a path).
        path: its folder (or .gguf file).
        size_bytes: bytes on disk.
        source: "hf-cache", "lm-studio" or "opened".
        complete: whether it is a chat model with every file it needs (a cancelled download is not).
        problem: why it cannot be used, when not complete: one line saying what to pick instead.
        kind: the problem in a word or two ("damaged", "DFlash drafter"), "" when complete.
        foreign: whether it holds another kind of model (a drafter, an adapter, an embedding model), which the
            picker lists with the reason rather than leaving out.
        base_model: it has no chat template (it continues text; chats reach it as a plain transcript).
        sees_images: it has a vision tower and takes images (engine/models/vision.py).
    """

    name: str
    path: Path
    size_bytes: int
    source: str
    complete: bool = True
    problem: str = ""
    kind: str = ""
    foreign: bool = False
    base_model: bool = False
    sees_images: bool = False

    @property
    def size_gb(self) -> float:
        return self.size_bytes / 1e9

    @property
    def unusable_because(self) -> str:
        """Why it cannot be loaded, in a few words ("DFlash drafter, not a chat model", "damaged"); "" if it can."""
        if self.complete:
            return ""
        return f"{self.kind}, not a chat model" if self.foreign else self.kind


def cached_models(cache_dir: Path | None = None) -> list[LocalModel]:
    """Model repos in the HF cache, largest first; repos without config and weights in a snapshot are
    listed as incomplete (an interrupted download)."""
    from huggingface_hub import scan_cache_dir

    cache_dir = cache_dir or hub_cache_dir()
    if not cache_dir.exists():
        return []
    models = []
    for repo in scan_cache_dir(cache_dir).repos:
        if repo.repo_type != "model":
            continue
        path, verdict = _best_snapshot(repo)
        models.append(_local_model(repo.repo_id, path, repo.size_on_disk, "hf-cache", verdict))
    return sorted(models, key=lambda m: -m.size_bytes)


def _best_snapshot(repo: Any) -> tuple[Path, Verdict | None]:
    """A cached repo's usable snapshot if it has one; else its first, with why it cannot be used: another kind of
    model, named, or a download that stopped part-way."""
    refused: list[tuple[Path, Verdict]] = []
    for rev in repo.revisions:
        path = Path(rev.snapshot_path)
        verdict = _verdict(path)
        if verdict is None:
            return path, None
        refused.append((path, verdict))
    if refused and refused[0][1].foreign:
        return refused[0]
    path, verdict = refused[0] if refused else (Path(repo.repo_path), None)
    return path, Verdict("incomplete: download again to resume", verdict.problem if verdict else "", False)


def delete_cached_model(repo_id: str, cache_dir: Path | None = None) -> int:
    """Remove a repo from the HF cache; return the bytes freed."""
    from huggingface_hub import scan_cache_dir

    cache_dir = cache_dir or hub_cache_dir()
    if cache_dir.exists():
        info = scan_cache_dir(cache_dir)
        for repo in info.repos:
            if repo.repo_id == repo_id and repo.repo_type == "model":
                strategy = info.delete_revisions(*(rev.commit_hash for rev in repo.revisions))
                strategy.execute()
                if Path(repo.repo_path).exists():  # a repo with no complete revision keeps its partial blobs
                    shutil.rmtree(repo.repo_path)
                return repo.size_on_disk
    raise ModelNotFoundError(f"{repo_id} is not in the Hugging Face cache ({cache_dir}); nothing to delete.")


@dataclass(frozen=True)
class Verdict:
    """Why a folder or file on disk cannot be loaded as a chat model (see LocalModel)."""

    kind: str
    problem: str
    foreign: bool


def _verdict(path: Path) -> Verdict | None:
    """What is wrong with a model folder or GGUF file, judged from its files alone; None when it is usable."""
    try:
        check_model_path(path)
    except NotAModelError as e:
        return Verdict(e.kind, str(e), isinstance(e, NotAChatModelError))
    except SpecChatError as e:
        return Verdict("damaged", str(e), False)
    return None


def _local_model(name: str, path: Path, size: int, source: str, verdict: Verdict | None) -> LocalModel:
    if verdict is None:
        return LocalModel(name, path, size, source, base_model=is_base_model(path), sees_images=sees_images(path))
    return LocalModel(name, path, size, source, False, verdict.problem, verdict.kind, verdict.foreign)


def _folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def lm_studio_models(folders: tuple[Path, ...] = LM_STUDIO_FOLDERS) -> list[LocalModel]:
    """MLX folders and GGUF files in LM Studio's models folder (publisher/model/...)."""
    found = []
    for root in folders:
        if not root.is_dir():
            continue
        for candidate in sorted(root.glob("*/*")):
            verdict = _verdict(candidate) if candidate.is_dir() else None
            if candidate.is_dir() and (verdict is None or verdict.foreign):
                found.append(_local_model(str(candidate), candidate, _folder_bytes(candidate), "lm-studio", verdict))
            elif candidate.is_dir():
                for gguf in sorted(candidate.glob("*.gguf")):
                    found.append(LocalModel(str(gguf), gguf, gguf.stat().st_size, "lm-studio"))
    return found


def _remembered_file() -> Path:
    return data_dir() / "models.json"


def _read_remembered() -> list[dict]:
    try:
        return json.loads(_remembered_file().read_text())
    except (OSError, json.JSONDecodeError):
        return []


def _write_remembered(entries: list[dict]) -> None:
    """Replace models.json whole (a temporary file renamed over it), so a failed write never leaves half a list."""
    path = _remembered_file()
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(entries, indent=2))
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise SpecChatError(
            f"Cannot save the list of opened models in {path.parent} ({e.strerror or e}). "
            "Free some disk space or fix the folder's permissions, then try again."
        ) from e


def remembered_models() -> list[LocalModel]:
    """Models the user opened from a folder or file, still on disk, most recent first; one that has become
    unusable since (a damaged copy) is listed as incomplete, with the reason, so that it can be removed."""
    models = []
    for entry in _read_remembered():
        path = Path(entry["path"])
        if path.exists():
            models.append(_local_model(entry["path"], path, _folder_bytes(path), "opened", _verdict(path)))
    return models


def remember_model(path: Path) -> None:
    """Add a folder or GGUF file to the remembered models (moving it to the front); refuse one that is not a
    usable model or a drafter SpecChat drafts with, with the reason."""
    path = path.expanduser().resolve()
    try:
        check_model_path(path)
    except NotAChatModelError:
        if folder_drafter(path) is None:  # a DFlash or EAGLE-3 drafter is kept: it is a draft, if not a target
            raise
    entries = [e for e in _read_remembered() if e.get("path") != str(path)]
    entries.insert(0, {"path": str(path), "added": time.time()})
    _write_remembered(entries)


def forget_model(path: Path) -> None:
    """Remove a folder or GGUF file from the remembered models."""
    path = path.expanduser().resolve()
    _write_remembered([e for e in _read_remembered() if e.get("path") != str(path)])


def all_local_models() -> list[LocalModel]:
    """Everything the picker lists without a download: remembered, HF cache (complete, or another kind of model,
    listed with what it is), LM Studio."""
    seen: set[str] = set()
    models = []
    for model in remembered_models() + [m for m in cached_models() if m.complete or m.foreign] + lm_studio_models():
        if model.name not in seen:
            seen.add(model.name)
            models.append(model)
    return models


def as_dict(model: LocalModel) -> dict[str, object]:
    out = asdict(model)
    out["path"] = str(model.path)
    return out
