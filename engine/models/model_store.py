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

from .app_paths import data_dir, hub_cache_dir
from ..errors import ModelNotFoundError, SpecChatError
from .loading import check_model_folder, check_model_path

LM_STUDIO_FOLDERS = (Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models")


@dataclass(frozen=True)
class LocalModel:
    """A model found on disk.

    Attributes:
        name: what to load it by (a repo id for the HF cache, else a path).
        path: its folder (or .gguf file).
        size_bytes: bytes on disk.
        source: "hf-cache", "lm-studio" or "opened".
        complete: whether every file a model needs is there (a cancelled download is not).
        problem: why it cannot be used, when not complete.
    """

    name: str
    path: Path
    size_bytes: int
    source: str
    complete: bool = True
    problem: str = ""

    @property
    def size_gb(self) -> float:
        return self.size_bytes / 1e9


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
        snapshots = [rev.snapshot_path for rev in repo.revisions]
        complete = any(_is_model_folder(Path(s)) for s in snapshots)
        path = Path(snapshots[0]) if snapshots else Path(repo.repo_path)
        models.append(LocalModel(repo.repo_id, path, repo.size_on_disk, "hf-cache", complete))
    return sorted(models, key=lambda m: -m.size_bytes)


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


def _is_model_folder(path: Path) -> bool:
    try:
        check_model_folder(path)
    except SpecChatError:
        return False
    return True


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
            if candidate.is_dir() and _is_model_folder(candidate):
                found.append(LocalModel(str(candidate), candidate, _folder_bytes(candidate), "lm-studio"))
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
            try:
                check_model_path(path)
                problem = ""
            except SpecChatError as e:
                problem = str(e)
            models.append(LocalModel(entry["path"], path, _folder_bytes(path), "opened", not problem, problem))
    return models


def remember_model(path: Path) -> None:
    """Add a folder or GGUF file to the remembered models (moving it to the front); refuse one that is not a
    usable model, with the reason."""
    path = path.expanduser().resolve()
    check_model_path(path)
    entries = [e for e in _read_remembered() if e.get("path") != str(path)]
    entries.insert(0, {"path": str(path), "added": time.time()})
    _write_remembered(entries)


def forget_model(path: Path) -> None:
    """Remove a folder or GGUF file from the remembered models."""
    path = path.expanduser().resolve()
    _write_remembered([e for e in _read_remembered() if e.get("path") != str(path)])


def all_local_models() -> list[LocalModel]:
    """Everything the picker can offer without a download: remembered, HF cache (complete), LM Studio."""
    seen: set[str] = set()
    models = []
    for model in remembered_models() + [m for m in cached_models() if m.complete] + lm_studio_models():
        if model.name not in seen:
            seen.add(model.name)
            models.append(model)
    return models


def as_dict(model: LocalModel) -> dict[str, object]:
    out = asdict(model)
    out["path"] = str(model.path)
    return out
