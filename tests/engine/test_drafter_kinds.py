"""The registry of drafter kinds: what each row says, read the way the policy, the pair and the labels read it."""

from __future__ import annotations

import pytest

from engine import drafter_kinds
from engine.drafter_kinds import candidates, drafter_label, drafters_named, is_block, is_persistent, kind, names
from engine.params import GenerationParams


def test_the_policy_s_qualified_sources_are_read_as_their_kind() -> None:
    """The policy keeps "model:code" and "lookup+copying" apart from "model" and "lookup"; the row is the same."""
    assert kind("model:code").name == "model" and kind("lookup+copying").name == "lookup"
    assert [source for source in ("model:code", "lookup+long", "mtp", "eagle3", "dflash", "dspark", "none")
            if is_persistent(source)] == ["model:code", "mtp", "eagle3", "dflash", "dspark"]
    assert [source for source in ("model", "lookup", "mtp", "eagle3", "dflash", "dspark", "none")
            if is_block(source)] == ["dflash", "dspark"]
    with pytest.raises(KeyError):
        kind("none")


def test_a_combination_runs_its_parts_in_order() -> None:
    assert kind("model+lookup").runs == ("lookup", "model") and kind("dflash").runs == ("dflash",)
    assert GenerationParams(drafter="model+lookup").looks_up and GenerationParams(drafter="model+lookup").uses_draft_model
    assert not GenerationParams(drafter="dflash").looks_up and not GenerationParams(drafter="mtp").uses_draft_model


def test_every_drafter_a_pair_has_is_a_candidate() -> None:
    """Lookup always; the draft model when one is loaded; the target's heads when its config declares them (in
    text_config for multimodal checkpoints); a drafter folder when one is loaded."""
    assert candidates((), False, {}) == ("lookup",)
    assert candidates(("dflash",), True, {"text_config": {"mtp_num_hidden_layers": 1}}) == (
        "model", "lookup", "mtp", "dflash")
    assert candidates(("eagle3",), False, {"num_nextn_predict_layers": 1}) == ("lookup", "mtp", "eagle3")


def test_labels_name_each_drafter_and_each_share() -> None:
    assert drafter_label("mtp") == "built-in MTP drafter" and drafter_label("something-else") == "something-else"
    assert drafters_named({}, "dflash") == "DFlash drafter"
    assert drafters_named({"lookup": 62, "model": 38}, "model+lookup") == "lookup 62%, draft model 38%"


def test_every_choice_is_a_valid_setting_and_nothing_else_is() -> None:
    for name in names():
        assert GenerationParams(drafter=name).drafter == name
    with pytest.raises(Exception, match="drafter must be one of model, lookup, model\\+lookup, mtp"):
        GenerationParams(drafter="medusa")
    assert all(row.folder is not None and row.network and row.round for row in drafter_kinds.folder_kinds())
