"""Whether a chosen draft can draft for a target, judged before any weights load (the picker's "Not offered").

A draft model must share the target's tokenizer (engine/models/compatibility.py). A DFlash, DSpark or EAGLE-3 folder has
no tokenizer of its own: it reads the target's hidden states and names the model it was trained for, so it is
judged by its config against the target's (hidden size, vocabulary, layers it taps, the target it names) with
the same checks its loader runs. The target's built-in MTP heads are there when its config declares them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import SpecChatError
from ..models.compatibility import PairCheck, check_pair
from ..models.draft_choice import BUILT_IN_MTP, draft_folder, folder_drafter, has_mtp_heads
from ..models.folder_kind import folder_name, read_json


def check_draft(target: str, draft: str) -> PairCheck:
    """The verdict on `draft` (a model, a drafter folder or BUILT_IN_MTP) for `target`, both by name."""
    from ..models.loading import looks_like_path, resolve_model_path

    target_path = resolve_model_path(target)
    target_name = folder_name(target_path) if looks_like_path(target) else target
    if draft == BUILT_IN_MTP:
        return _mtp_check(target_path, target_name)
    folder = draft_folder(draft)
    drafter = folder_drafter(folder)
    if folder is None or drafter is None:
        return check_pair(target, draft)
    try:
        check_drafter_folder(folder, drafter, read_json(target_path / "config.json") or {}, target_name)
    except SpecChatError as error:
        return PairCheck(compatible=False, reasons=[str(error).rstrip(".")])
    return PairCheck(compatible=True)


def check_drafter_folder(folder: Path, drafter: str, target_config: dict[str, Any], target_name: str) -> None:
    """Raise one line (IncompatiblePairError, or NotAModelError for a broken config or a head SpecChat cannot run)
    unless the DFlash, DSpark or EAGLE-3 drafter in `folder` fits the target whose config.json is `target_config`."""
    text = target_config.get("text_config") or target_config
    layers = int(text.get("num_hidden_layers") or 0)
    if drafter == "dflash":
        from .dflash import read_dflash_config
        from .dflash_pairing import check_target

        check_target(folder, read_dflash_config(folder), target_config, layers, target_name)
    elif drafter == "dspark":
        from .dflash_pairing import check_target
        from .dspark import read_dspark_config

        backbone = read_dspark_config(folder, weight_names=set()).backbone  # the config alone: no weights read
        check_target(folder, backbone, target_config, layers, target_name, "DSpark")
    elif drafter == "eagle3":
        from .eagle3 import check_target, parse_config

        config = read_json(folder / "config.json") or {}
        check_target(folder, config, parse_config(config, folder), target_config, target_name, layers)


def _mtp_check(target_path: Path, target_name: str) -> PairCheck:
    if has_mtp_heads(target_path):
        return PairCheck(compatible=True)
    return PairCheck(compatible=False, reasons=[
        f"{target_name.rstrip('/').split('/')[-1]} has no built-in MTP heads (its config declares no "
        "mtp_num_hidden_layers or num_nextn_predict_layers); pick a draft model or lookup instead"
    ])
