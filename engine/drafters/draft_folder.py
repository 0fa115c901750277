"""Which drafter a `--draft` folder holds (EAGLE-3, DFlash, DSpark), told from its config.json before anything loads.

`--draft`, the server and the app take a draft model or a drafter that reads the target's hidden states in the
same place; what the folder holds decides which is loaded and which drafter the round runs by default. JSON
only: cheap enough to decide before the target loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..models.draft_choice import draft_folder
from ..models.folder_kind import is_dspark_config, read_json

DFLASH_ARCHITECTURES = {"DFlashDraftModel": 1, "DFlash2DraftModel": 2}


def is_eagle3_config(config: dict[str, Any] | None) -> bool:
    """Whether a config.json is an EAGLE-3 drafter's (speculators' or the original layout)."""
    if not config:
        return False
    names = " ".join(str(n) for n in (config.get("architectures") or [])).lower()
    return str(config.get("speculators_model_type", "")).lower() == "eagle3" or "eagle3" in names


def dflash_version(config: dict[str, Any] | None) -> int | None:
    """1 for a DFlash drafter's config, 2 for DFlash2, None for anything else (DSpark's share `dflash_config`)."""
    if not config or is_dspark_config(config):
        return None
    names = config.get("architectures") or []
    found = [DFLASH_ARCHITECTURES[n] for n in ([names] if isinstance(names, str) else names) if n in DFLASH_ARCHITECTURES]
    if found:
        return found[0]
    return 1 if isinstance(config.get("dflash_config"), dict) else None


def hidden_drafter(spec: str | None) -> tuple[str, Path] | None:
    """("eagle3", "dflash" or "dspark", its folder) when `spec` names a drafter of that kind; None for anything else (a
    draft model, a missing folder)."""
    path = draft_folder(spec) if spec else None
    config = read_json(path / "config.json") if path is not None else None
    if is_eagle3_config(config):
        return "eagle3", path  # type: ignore[return-value]  # a config was read: path is set
    if dflash_version(config) is not None:
        return "dflash", path  # type: ignore[return-value]  # a config was read: path is set
    if config is not None and is_dspark_config(config):
        return "dspark", path  # type: ignore[return-value]  # a config was read: path is set
    return None
