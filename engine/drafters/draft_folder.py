"""Which drafter a `--draft` folder holds (EAGLE-3, DFlash, DSpark...), told from its config.json before anything loads.

`--draft`, the server and the app take a draft model or a drafter that reads the target's hidden states in the
same place; what the folder holds decides which is loaded and which drafter the round runs by default. JSON
only: cheap enough to decide before the target loads. What a config is, is `folder_kind.drafter_family`'s to say.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..models.draft_choice import draft_folder, folder_drafter
from ..models.folder_kind import architectures, drafter_kind

DFLASH_ARCHITECTURES = {"DFlashDraftModel": 1, "DFlash2DraftModel": 2}


def dflash_version(config: dict[str, Any] | None) -> int | None:
    """1 for a DFlash drafter's config, 2 for DFlash2, None for anything else: another kind (DSpark's share
    `dflash_config`), or a DFlash version SpecChat cannot run (`DFlash3DraftModel`)."""
    if drafter_kind(config) != "dflash":
        return None
    names = architectures(config or {})
    known = [DFLASH_ARCHITECTURES[n] for n in names if n in DFLASH_ARCHITECTURES]
    if known:
        return known[0]
    return None if any("dflash" in n.lower() for n in names) else 1  # no DFlash class named: its dflash_config says


def hidden_drafter(spec: str | None) -> tuple[str, Path] | None:
    """(the drafter kind, its folder) when `spec` names a drafter folder SpecChat drafts with ("eagle3", "dflash"...);
    None for anything else (a draft model, a missing folder)."""
    path = draft_folder(spec) if spec else None
    kind = folder_drafter(path)
    return (kind, path) if kind is not None and path is not None else None
