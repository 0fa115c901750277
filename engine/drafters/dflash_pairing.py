"""Whether a DFlash drafter fits a target: the same hidden size and vocabulary, enough layers to tap, the model
its card names.

A drafter reads the target's hidden states through `fc` (n_taps x hidden wide) and drafts through the target's
own embedding table and LM head, so a target of another width or vocabulary cannot run it at all, and one of the
same shape but another model drafts garbage that the target rejects (exact, but slower than no drafter). Each
mismatch is one line naming the drafter, what differs, and what to pick.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import IncompatiblePairError
from ..models.folder_kind import folder_name, read_json
from .dflash_model import DFlashConfig
from .pairing import another_width

# Where a drafter may name the model it was trained against: config keys, then the model card's front matter.
TARGET_KEYS = ("target_model", "target_model_name_or_path", "base_model", "verifier")
_FRONT_MATTER_BASE = re.compile(r"^base_model:[ \t]*(?:\n[ \t]*-[ \t]*)?([^\s#]+)", re.MULTILINE)


def named_target(path: Path, config: dict[str, Any]) -> str | None:
    """The target a drafter names (its config or its README's `base_model:`), or None when it names none
    (z-lab's configs do not; their repo names do, as `<target>-DFlash`)."""
    for source in (config.get("dflash_config") or {}, config):
        for key in TARGET_KEYS:
            if isinstance(source.get(key), str) and source[key]:
                return source[key]
    readme = path / "README.md"
    text = readme.read_text(encoding="utf-8", errors="replace") if readme.is_file() else ""
    front = text.split("---")[1] if text.startswith("---") and text.count("---") >= 2 else ""
    match = _FRONT_MATTER_BASE.search(front)
    return match.group(1).strip("'\"") if match else None


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    return config.get("text_config") or config


def check_target(path: Path, draft: DFlashConfig, target_config: dict[str, Any], target_layers: int,
                 target_name: str, family: str = "DFlash") -> None:
    """Raise IncompatiblePairError with one line unless the drafter at `path` (of `family`: DSpark shares
    DFlash's backbone) fits the target."""
    named = named_target(path, read_json(path / "config.json") or {})
    problem = _shape_problem(draft, _text_config(target_config), target_layers) or _name_problem(named, target_name)
    if problem is None:
        return
    trained_for = f" for {named}" if named else ""
    pick = f"Pick {named} (or a conversion of it) as the target" if named else "Pick the target it was trained for"
    raise IncompatiblePairError(
        f"{folder_name(path)} is a {family} drafter{trained_for} and cannot draft for {target_name}: {problem}. "
        f"{pick}, or another drafter."
    )


def _shape_problem(draft: DFlashConfig, target: dict[str, Any], layers: int) -> str | None:
    hidden, vocab = target.get("hidden_size"), target.get("vocab_size")
    if hidden is not None and int(hidden) != draft.hidden_size:
        return another_width(draft.hidden_size, hidden)
    if vocab is not None and int(vocab) != draft.vocab_size:
        return f"its vocabulary has {vocab} tokens where the drafter has {draft.vocab_size}"
    if layers != draft.num_target_layers or max(draft.target_layer_ids) >= layers:
        return (f"it has {layers} layers where the drafter taps layers {list(draft.target_layer_ids)} of "
                f"{draft.num_target_layers}")
    return None


def _name_problem(named: str | None, target_name: str) -> str | None:
    """A named target the target's own name does not contain (ignoring the owner, case and a quantisation
    suffix: mlx-community/Qwen3-8B-4bit is Qwen/Qwen3-8B)."""
    if not named:
        return None
    base = named.rstrip("/").split("/")[-1].lower()
    own = target_name.rstrip("/").split("/")[-1].lower()
    return None if base in own else f"it was trained against {named}"
