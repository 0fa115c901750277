"""What a chosen draft is, told from JSON before anything loads: a draft model, a drafter folder (DFlash, DSpark, EAGLE-3)
that reads the target's hidden states, or nothing; and which drafters a target has built in (MTP heads).

The picker, the saved pair and the worker pass a pair around as two strings (target, draft): what is loaded. The
target's own heads are part of the target, loaded with it, so they never travel as a draft; which drafter
drafts is chosen apart from what is loaded (the app's Drafter choice, `--drafter`). `drafter_for` says which of the
engine's drafters (engine/drafter_kinds.py) a draft is. JSON only, no MLX: the picker asks on the GUI thread.
"""

from __future__ import annotations

from pathlib import Path

from ..drafter_kinds import KINDS, built_in, folder_kinds
from .folder_kind import drafter_kind, folder_name, read_json


def drafts_with(kind: str) -> bool:
    """Whether a folder's kind as the store lists it ("DFlash drafter", folder_kind's) is a drafter SpecChat drafts
    with, given as the draft."""
    return any(kind == f"{row.family} drafter" for row in folder_kinds())


def pair_drafters() -> dict[str, str]:
    """The drafters a recommended pair may name (a draft model, the target's heads, a drafter folder), with their
    labels: every single kind but lookup, which needs no draft."""
    return {row.name: row.label for row in KINDS.values() if not row.parts and row.pairs_with != "any"}


def built_in_drafters(folder: Path) -> tuple[str, ...]:
    """The drafters built into the model in `folder`: those whose heads its config.json declares ("mtp")."""
    return built_in(read_json(Path(folder) / "config.json") or {})


def draft_folder(spec: str) -> Path | None:
    """The local folder a draft names (a path, or a downloaded repo id); None when there is none on disk."""
    from .loading import REPO_ID, cached_repo_path, looks_like_path

    path = Path(spec).expanduser()
    if path.is_dir():
        return path
    return cached_repo_path(spec) if REPO_ID.match(spec) and not looks_like_path(spec) else None


def folder_drafter(folder: Path | None) -> str | None:
    """The drafter kind ("dflash", "eagle3"...) of a drafter folder SpecChat drafts with; None for anything else
    (folder_kind.drafter_family is the one rule)."""
    return drafter_kind(read_json(folder / "config.json")) if folder is not None else None


def drafter_folder(draft: str | None) -> tuple[str, Path] | None:
    """(the drafter kind, its folder) when `draft` names a drafter folder SpecChat drafts with ("eagle3", "dflash"...):
    what `ModelPair.load` loads as a drafter of the target instead of a draft model; None for anything else (a draft
    model, a missing folder)."""
    path = draft_folder(draft) if draft else None
    kind = folder_drafter(path)
    return (kind, path) if kind is not None and path is not None else None


def drafter_for(draft: str | None) -> str:
    """The drafter a chosen draft is: "dflash", "dspark", "eagle3" (a drafter folder), "model" (a draft model), ""
    (no draft)."""
    if not draft:
        return ""
    return folder_drafter(draft_folder(draft)) or "model"


def shown_draft_name(draft: str | None) -> str | None:
    """How a window names a draft that is no draft model: a drafter folder or repo by its name (None: no draft)."""
    return folder_name(Path(draft).expanduser()) if draft else None
