"""What the policy measured of a pair is kept across launches, per pair and settings, in one JSON file."""

from __future__ import annotations

import json
from pathlib import Path

from engine.decoding.policy import memory
from engine.decoding.policy.draft_length import AdaptiveDraftLength
from engine.decoding.policy.estimates import RoundCosts

SETTINGS = ("auto", (True, 16, 4), (True, 0.0))


def measured_policy() -> AdaptiveDraftLength:
    policy = AdaptiveDraftLength(8)
    for _ in range(20):
        policy.observe(RoundCosts("lookup+copying", 6, 6, 0.0001, 0.060))
        policy.observe(RoundCosts("model", 4, 1, 0.004, 0.058))
        policy.observe(RoundCosts("dflash", 8, 3, 0.0005, 0.070))
        policy.observe(RoundCosts("none", 0, 0, 0.0, 0.050))
    return policy


def model_folder(path: Path, weights: bytes = b"1234") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "model.safetensors").write_bytes(weights)
    return path


def test_a_new_launch_starts_from_what_the_last_one_measured(tmp_path: Path) -> None:
    pair = memory.pair_identity([model_folder(tmp_path / "target"), model_folder(tmp_path / "draft")], None)
    policy = measured_policy()
    memory.remember(policy, pair, SETTINGS, tmp_path)
    later = memory.recall(AdaptiveDraftLength(8), pair, SETTINGS, tmp_path)
    assert later.measured() == policy.measured()
    seen = lambda p: [(b.drafter, b.acceptance, b.predicted_tps, b.chosen_k, b.reason) for b in p.beliefs()]
    assert seen(later) == seen(policy)  # the same predictions and choices (when each last drafted is this launch's)
    assert [later.choose(s, 8) for s in ("lookup+copying", "model", "dflash")] == [
        policy.choose(s, 8) for s in ("lookup+copying", "model", "dflash")]


def test_another_pair_other_settings_or_changed_weights_start_afresh(tmp_path: Path) -> None:
    target = model_folder(tmp_path / "target")
    pair = memory.pair_identity([target], None)
    memory.remember(measured_policy(), pair, SETTINGS, tmp_path)
    fresh = AdaptiveDraftLength(8).measured()
    assert memory.recall(AdaptiveDraftLength(8), pair, ("model",), tmp_path).measured() == fresh
    assert memory.recall(AdaptiveDraftLength(8), pair + " + dflash", SETTINGS, tmp_path).measured() == fresh
    model_folder(target, b"re-quantised")
    changed = memory.pair_identity([target], None)
    assert memory.recall(AdaptiveDraftLength(8), changed, SETTINGS, tmp_path).measured() == fresh


def test_an_unreadable_file_is_started_over(tmp_path: Path) -> None:
    (tmp_path / memory.MEMORY_FILE).write_text("{not json", encoding="utf-8")
    assert memory.recall(AdaptiveDraftLength(8), "pair", SETTINGS, tmp_path).measured() == AdaptiveDraftLength(8).measured()
    bad = {"version": memory.VERSION, "entries": {f"pair | {SETTINGS!r}": {"acceptance": 3}}}
    (tmp_path / memory.MEMORY_FILE).write_text(json.dumps(bad))
    assert memory.recall(AdaptiveDraftLength(8), "pair", SETTINGS, tmp_path).measured() == AdaptiveDraftLength(8).measured()
    memory.remember(measured_policy(), "pair", SETTINGS, tmp_path)
    assert memory.recall(AdaptiveDraftLength(8), "pair", SETTINGS, tmp_path).measured() == measured_policy().measured()


def test_a_file_of_an_earlier_version_is_started_over(tmp_path: Path) -> None:
    """Version 1 kept code's and chat's estimates together: its entries are not read, and the next answer's replace it."""
    memory.remember(measured_policy(), "pair", SETTINGS, tmp_path)
    path = tmp_path / memory.MEMORY_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), "version": 1}))
    assert memory.recall(AdaptiveDraftLength(8), "pair", SETTINGS, tmp_path).measured() == AdaptiveDraftLength(8).measured()
    memory.remember(measured_policy(), "other pair", SETTINGS, tmp_path)
    assert list(json.loads(path.read_text())["entries"]) == [f"other pair | {SETTINGS!r}"]


def test_only_the_latest_entries_are_kept(tmp_path: Path) -> None:
    for n in range(memory.KEPT_ENTRIES + 3):
        memory.remember(measured_policy(), f"pair {n}", SETTINGS, tmp_path)
    assert memory.recall(AdaptiveDraftLength(8), "pair 0", SETTINGS, tmp_path).measured() == AdaptiveDraftLength(8).measured()
    last = f"pair {memory.KEPT_ENTRIES + 2}"
    assert memory.recall(AdaptiveDraftLength(8), last, SETTINGS, tmp_path).measured() == measured_policy().measured()
