"""The `speculation` object every API adds: it names the drafter asked for and the drafters that drafted."""

from __future__ import annotations

from engine.events import GenerationResult, GenerationStats
from engine.serving.speculation_report import speculation


def _result(mode: str, **drafted_by: int) -> GenerationResult:
    stats = GenerationStats(generated_tokens=6, rounds=3, drafted=sum(drafted_by.values()), accepted=3, generation_s=1.0)
    stats.drafted_by.update(drafted_by)
    return GenerationResult("", [1] * 6, ["accepted"] * 6, mode, "length", stats)  # type: ignore[arg-type]  # strings for Literals


def test_it_says_which_drafters_drafted_how_many_tokens() -> None:
    """With "model+lookup" the object said only what was asked: how much each drafter drafted was not in it."""
    spec = speculation(_result("speculative", lookup=5, model=3), "model+lookup")
    assert spec["drafter"] == "model+lookup" and spec["drafted_by"] == {"lookup": 5, "model": 3}
    assert speculation(_result("speculative", mtp=4), "mtp")["drafted_by"] == {"mtp": 4}


def test_standard_decoding_names_no_drafter() -> None:
    spec = speculation(_result("standard"), "model")
    assert spec["drafter"] == "none" and spec["drafted_by"] == {}
