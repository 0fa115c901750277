"""The toolbar's pair line names the drafter the next answer runs, and "draft model" in the settings runs the
pair's own drafter: its draft model, the target's MTP heads, or a DFlash or EAGLE-3 folder."""

from __future__ import annotations

import pytest

from app.pair_label import next_drafter, pair_label
from app.worker import PairInfo
from engine.params import GenerationParams


def info(drafter: str, draft_name: str | None) -> PairInfo:
    return PairInfo(target="t", draft=None, target_name="Qwen3.6-27B", draft_name=draft_name, drafter=drafter)


@pytest.mark.parametrize("chosen, pair_drafter, runs", [
    ("model", "mtp", "mtp"), ("model+lookup", "mtp", "mtp"), ("model", "eagle3", "eagle3"), ("model", "dflash", "dflash"),
    ("model+lookup", "dspark", "dspark"),
    ("model", "model", "model"), ("model+lookup", "model", "model+lookup"), ("mtp", "model", "model"),
    ("lookup", "mtp", "lookup"), ("model", "", "lookup"), ("eagle3", "", "lookup"),
    ("auto", "", "auto"), ("auto", "model", "auto"), ("auto", "mtp", "auto"), ("auto", "dspark", "auto"),
])
def test_the_next_answer_drafts_with_the_pairs_own_drafter_unless_lookup_is_chosen(
        chosen: str, pair_drafter: str, runs: str) -> None:
    assert next_drafter(chosen, pair_drafter) == runs


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
