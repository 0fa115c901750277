"""The toolbar's line about the loaded pair: its models, what kind of model the target is, and how the next
answer will be decoded (so that a toggle or a setting is seen to take effect), and which drafter that is."""

from __future__ import annotations

from engine.drafter_kinds import drafter_label
from engine.events import lossy_label
from engine.models.base_model import BASE_MODEL_NOTE
from engine.params import GenerationParams

from .worker import PairInfo


def pair_label(info: PairInfo | None, params: GenerationParams | None, loading: bool) -> str:
    """`params`: the settings the next answer will use (None when no pair is loaded)."""
    if info is None or params is None:
        return "Loading…" if loading else "No models loaded"
    draft = "draft" if info.drafter in ("", "model") else "drafter"
    names = info.target_name + (f" ← {draft} {info.draft_name}" if info.draft_name else "")
    ssd = " (SSD)" if params.ssd and params.drafter != "auto" and params.uses_draft_model else ""  # Automatic asks after
    how = "standard decoding" if params.mode == "standard" else f"speculative, {drafter_label(params.drafter)}{ssd}"
    lossy = f" · {lossy_label(params.lenience)}" if params.lossy else ""
    base = f" · {BASE_MODEL_NOTE}" if info.base_model else ""
    across = f" · target across {info.macs} Macs" if info.macs > 1 else ""
    return f"{names}{base}{across} · {how}{lossy}" + (" · loading another pair…" if loading else "")
