"""What a chosen draft is, told from JSON: a DFlash, DSpark or EAGLE-3 folder, a draft model; and whether a target
has MTP heads of its own."""

from __future__ import annotations

from pathlib import Path

from engine.fixtures.tiny_dflash import build_dflash_pair
from engine.fixtures.tiny_dspark import build_dspark_pair
from engine.fixtures.tiny_eagle3 import build_eagle3_pair
from engine.models.draft_choice import drafter_for, has_mtp_heads, mtp_layer_count, shown_draft_name


def test_a_target_with_mtp_heads_is_told_from_a_plain_one(mtp_target, tiny_dirs) -> None:
    assert has_mtp_heads(mtp_target.folder("hybrid")) and has_mtp_heads(mtp_target.folder("dense"))
    assert not has_mtp_heads(tiny_dirs[0])


def test_the_config_keys_that_declare_mtp_heads() -> None:
    assert mtp_layer_count({"text_config": {"mtp_num_hidden_layers": 1}}) == 1  # Qwen3.5/3.6
    assert mtp_layer_count({"num_nextn_predict_layers": 2}) == 2  # Qwen3-Next, MiMo, DeepSeek
    assert mtp_layer_count({"num_hidden_layers": 4}) == 0


def test_each_kind_of_draft_runs_its_own_drafter(tmp_path: Path, tiny_dirs) -> None:
    eagle3 = build_eagle3_pair(tmp_path, trained=False)[1]
    dflash = build_dflash_pair(tmp_path)[1]
    assert drafter_for(str(eagle3)) == "eagle3" and drafter_for(str(dflash)) == "dflash"
    assert drafter_for(str(build_dspark_pair(tmp_path)[1])) == "dspark"
    assert drafter_for(str(tiny_dirs[1])) == "model"
    assert drafter_for("") == "" and shown_draft_name("") is None and shown_draft_name(str(dflash)) == dflash.name
