"""Whether a chosen draft can draft for a target, judged before any weights load (the picker's "Not offered").

A draft model must share the target's tokenizer (engine/models/compatibility.py). A DFlash, DSpark or EAGLE-3 folder has
no tokenizer of its own: it reads the target's hidden states and names the model it was trained for, so it is
judged by its config against the target's (hidden size, vocabulary, layers it taps, the target it names) with
the same checks its loader runs. The target's built-in MTP heads are there when its config declares them.

A draft model must also cost less than the target: one as big or bigger (the 1.5B of a 0.5B target's family, a
model's own quantized copy, which computes as much per token) only slows every answer down. Its cost is read from
the configs as parameters per token, not from the files' sizes, which a quantization shrinks without making a
token any cheaper to compute on this machine's CPU.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

from ..drafter_kinds import kind
from ..errors import SpecChatError
from ..models.compatibility import PairCheck, check_pair
from ..models.draft_choice import draft_folder, folder_drafter
from ..models.folder_kind import folder_name, read_json
from ..models.load_progress import LoadProgress


def check_draft(target: str, draft: str, progress: LoadProgress | None = None) -> PairCheck:
    """The verdict on `draft` (a model or a drafter folder) for `target`, both by name; a GGUF file among them is
    imported first (the check reads a tokenizer and a config.json), its stages reported to `progress`."""
    from ..models.loading import looks_like_path, resolve_model_path

    target_path = resolve_model_path(target, progress)
    target_name = folder_name(target_path) if looks_like_path(target) else target
    folder = draft_folder(draft)
    drafter = folder_drafter(folder)
    if folder is None or drafter is None:
        check = check_pair(target, draft, progress)
        return _cost_check(target_path, resolve_model_path(draft)) if check.compatible else check
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


def another_width(drafter: int, target: object) -> str:
    """A drafter that reads hidden states of another size than the target's, said for a user: what is wrong first,
    the sizes after ("its hidden size is 576 where the drafter reads 64" said neither what nor why)."""
    return f"it was trained for another target, a model of another width (hidden size {drafter}, this target's {target})"


def parameters_per_token(config: dict[str, Any]) -> int:
    """About how many weights a token's forward pass reads (attention, MLP, embeddings; a mixture of experts'
    active experts only), from a config.json; 0 when its shape is not there to read."""
    text = config.get("text_config") or config
    try:
        hidden, layers, heads = (int(text[key]) for key in ("hidden_size", "num_hidden_layers", "num_attention_heads"))
        vocab = int(text["vocab_size"])
    except (KeyError, TypeError, ValueError):
        return 0
    head_dim = int(text.get("head_dim") or hidden // heads)
    kv_heads = int(text.get("num_key_value_heads") or heads)
    experts = int(text.get("num_experts_per_tok") or 1)
    moe_inner = text.get("moe_intermediate_size") if experts > 1 else None
    inner = int(moe_inner or text.get("intermediate_size") or 4 * hidden)
    attention = 2 * hidden * head_dim * (heads + kv_heads)
    embeddings = vocab * hidden * (1 if text.get("tie_word_embeddings", config.get("tie_word_embeddings")) else 2)
    return layers * (attention + 3 * hidden * inner * experts) + embeddings


def _shown_count(n: int) -> str:
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"


def _cost_check(target_path: Path, draft_path: Path) -> PairCheck:
    """A draft model that reads as many weights a token as the target, or more, is refused with its count."""
    target, draft = (parameters_per_token(read_json(p / "config.json") or {}) for p in (target_path, draft_path))
    if target and draft >= target:
        return PairCheck(compatible=False, reasons=[
            f"as costly as the target or more ({_shown_count(draft)} parameters a token against the target's "
            f"{_shown_count(target)}): a draft must be a smaller, faster model"])
    return PairCheck(compatible=True)
