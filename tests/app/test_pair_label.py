"""The toolbar's pair line names the drafter the next answer runs, by the registry's label."""

from __future__ import annotations

from app.pair_label import pair_label
from app.worker import PairInfo
from engine.params import GenerationParams


def info(drafter: str, draft_name: str | None) -> PairInfo:
    return PairInfo(target="t", draft=None, target_name="Qwen3.6-27B", draft_name=draft_name, drafter=drafter)


def test_the_line_names_each_drafter() -> None:
    params = GenerationParams()
    assert pair_label(info("mtp", None), params.replace(drafter="mtp"), False) == (
        "Qwen3.6-27B · speculative, built-in MTP drafter")
    assert pair_label(info("eagle3", "speculator.eagle3"), params.replace(drafter="eagle3", ssd=True), False) == (
        "Qwen3.6-27B ← drafter speculator.eagle3 · speculative, EAGLE-3 drafter")  # SSD is the draft model's alone
    assert pair_label(info("model", "Qwen3-0.6B"), params.replace(drafter="model"), False) == (
        "Qwen3.6-27B ← draft Qwen3-0.6B · speculative, draft model")
    assert pair_label(info("model", "Qwen3-0.6B"), params, False) == (
        "Qwen3.6-27B ← draft Qwen3-0.6B · speculative, Automatic")


def test_ssd_is_named_only_where_it_runs() -> None:
    """SSD pre-drafts with a draft model chosen as the drafter; Automatic asks each round's drafter after the verdict."""
    params = GenerationParams(ssd=True)
    assert pair_label(info("model", "Qwen3-0.6B"), params.replace(drafter="model+lookup"), False).endswith("lookup (SSD)")
    assert pair_label(info("model", "Qwen3-0.6B"), params, False).endswith("speculative, Automatic")
