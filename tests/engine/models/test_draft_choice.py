"""What a chosen draft is, told from JSON: a DFlash, DSpark or EAGLE-3 folder, a draft model; and which drafters a
target has built in (MTP heads)."""

from __future__ import annotations

from pathlib import Path

from engine.fixtures.tiny_dflash import build_dflash_pair
from engine.fixtures.tiny_dspark import build_dspark_pair, specforge_layout
from engine.fixtures.tiny_eagle3 import build_eagle3_pair
from engine.models.draft_choice import built_in_drafters, drafter_folder, drafter_for, shown_draft_name
from tests import model_folders


def test_a_target_with_mtp_heads_is_told_from_a_plain_one(mtp_target, tiny_dirs) -> None:
    assert built_in_drafters(mtp_target.folder("hybrid")) == built_in_drafters(mtp_target.folder("dense")) == ("mtp",)
    assert built_in_drafters(tiny_dirs[0]) == ()


def test_each_kind_of_draft_runs_its_own_drafter(tmp_path: Path, tiny_dirs) -> None:
    eagle3 = build_eagle3_pair(tmp_path, trained=False)[1]
    dflash = build_dflash_pair(tmp_path)[1]
    assert drafter_for(str(eagle3)) == "eagle3" and drafter_for(str(dflash)) == "dflash"
    assert drafter_for(str(build_dspark_pair(tmp_path)[1])) == "dspark"
    assert drafter_for(str(tiny_dirs[1])) == "model"
    assert drafter_for("") == "" and shown_draft_name("") is None and shown_draft_name(str(dflash)) == dflash.name


def test_each_drafter_folder_is_named_with_its_kind(tmp_path: Path, tiny_dirs) -> None:
    dflash = model_folders.dflash_drafter(tmp_path / "Qwen3-8B-DFlash-b16")
    eagle3 = model_folders.eagle3_speculator(tmp_path / "Llama-3.1-8B-Instruct-speculator.eagle3")
    assert drafter_folder(str(dflash)) == ("dflash", dflash)
    assert drafter_folder(str(eagle3)) == ("eagle3", eagle3)
    assert drafter_folder(str(tiny_dirs[1])) is None  # a draft model
    assert drafter_folder(str(tmp_path / "missing")) is None and drafter_folder(None) is None
    assert drafter_folder("someone/not-downloaded") is None


def test_a_dspark_folder_in_either_packaging_is_a_dspark_drafter(tmp_path: Path) -> None:
    """SpecForge's packaging carries a `dflash_config` too: it must not be taken for a DFlash drafter."""
    deepseek = build_dspark_pair(tmp_path, "qwen3")[1]
    specforge = specforge_layout(deepseek, tmp_path / "Qwen3.8-27B-DSpark")
    assert drafter_folder(str(deepseek)) == ("dspark", deepseek)
    assert drafter_folder(str(specforge)) == ("dspark", specforge)
