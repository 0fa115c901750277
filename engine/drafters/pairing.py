"""Whether a chosen draft can draft for a target, judged before any weights load (the picker's "Not offered").

A draft model must share the target's tokenizer (engine/models/compatibility.py). A DFlash, DSpark or EAGLE-3 folder has
no tokenizer of its own: it reads the target's hidden states and names the model it was trained for, so it is
judged by its config against the target's (hidden size, vocabulary, layers it taps, the target it names) with
the same checks its loader runs. The target's built-in MTP heads are there when its config declares them.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

from ..drafter_kinds import kind
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
    unless the `drafter` kind's folder fits the target whose config.json is `target_config`: the kind's own check
    (`check_folder` of the network its registry row names), run on the configs alone."""
    text = target_config.get("text_config") or target_config
    layers = int(text.get("num_hidden_layers") or 0)
    import_module(kind(drafter).network).check_folder(folder, target_config, layers, target_name)


def _mtp_check(target_path: Path, target_name: str) -> PairCheck:
    if has_mtp_heads(target_path):
        return PairCheck(compatible=True)
    return PairCheck(compatible=False, reasons=[
        f"{target_name.rstrip('/').split('/')[-1]} has no built-in MTP heads (its config declares no "
        "mtp_num_hidden_layers or num_nextn_predict_layers); pick a draft model or lookup instead"
    ])
