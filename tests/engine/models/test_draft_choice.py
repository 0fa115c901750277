"""What a chosen draft is, told from JSON: a DFlash, DSpark or EAGLE-3 folder, a draft model; and which drafters a
target has built in (MTP heads)."""

from __future__ import annotations

from pathlib import Path

from engine.fixtures.tiny_dflash import build_dflash_pair
from engine.fixtures.tiny_dspark import build_dspark_pair
from engine.fixtures.tiny_eagle3 import build_eagle3_pair
from engine.models.draft_choice import built_in_drafters, drafter_for, shown_draft_name


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
