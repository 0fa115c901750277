"""A drafter folder is judged by its config against the target's before any weights load; the target's built-in
MTP heads are offered only when its config declares them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.drafters.pairing import check_draft, parameters_per_token
from engine.fixtures.tiny_dflash import build_dflash_pair
from engine.fixtures.tiny_dspark import build_dspark_pair
from engine.fixtures.tiny_eagle3 import build_eagle3_pair
from engine.models.draft_choice import built_in_drafters


def without_weights(folder: Path, into: Path) -> Path:
    """The drafter's JSON alone: a verdict reached from it read no weights."""
    into.mkdir()
    for f in folder.glob("*.json"):
        shutil.copy(f, into / f.name)
    return into


def test_an_eagle3_drafter_pairs_with_its_target_and_refuses_another_with_the_reason(
        tmp_path: Path, mtp_target) -> None:
    target, drafter = build_eagle3_pair(tmp_path, trained=False)
    drafter = without_weights(drafter, tmp_path / "Llama-3.1-8B-Instruct-speculator.eagle3")
    assert check_draft(str(target), str(drafter)).compatible
    refused = check_draft(str(mtp_target.folder("dense")), str(drafter))
    assert not refused.compatible and len(refused.reasons) == 1 and "\n" not in refused.reasons[0]
    assert refused.reasons[0].startswith("Llama-3.1-8B-Instruct-speculator.eagle3 is an EAGLE-3 drafter for "
                                         "specchat/tiny-eagle3-target and cannot draft for tiny-mtp-dense-0: it has 3 "
                                         "layers where the drafter taps layers [1, 2, 4]. Pick specchat/tiny-eagle3")


def test_a_drafter_trained_for_another_model_of_the_same_shape_is_refused(tmp_path: Path) -> None:
    target, drafter = build_eagle3_pair(tmp_path, trained=False)
    drafter = without_weights(drafter, tmp_path / "other")
    config = json.loads((drafter / "config.json").read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = "meta-llama/Llama-3.1-8B-Instruct"
    (drafter / "config.json").write_text(json.dumps(config))
    refused = check_draft(str(target), str(drafter))
    assert not refused.compatible and "it was trained against meta-llama/Llama-3.1-8B-Instruct" in refused.reasons[0]


@pytest.mark.parametrize("family, build, name", [("DFlash", build_dflash_pair, "Qwen3-8B-DFlash-b16"),
                                                  ("DSpark", build_dspark_pair, "dspark_qwen3_8b_block7")])
def test_a_block_drafter_pairs_with_its_target_and_refuses_another_with_the_reason(
    family: str, build, name: str, tmp_path: Path, tiny_dirs
) -> None:
    target, drafter = build(tmp_path)
    drafter = without_weights(drafter, tmp_path / name)
    assert check_draft(str(target), str(drafter)).compatible
    refused = check_draft(str(tiny_dirs[0]), str(drafter))
    assert not refused.compatible and refused.reasons == [
        f"{name} is a {family} drafter and cannot draft for tiny-target: its vocabulary has 384 tokens "
        "where the drafter has 9. Pick the target it was trained for, or another drafter"]


def test_a_dspark_head_this_network_does_not_compute_is_refused_before_loading(tmp_path: Path) -> None:
    target, drafter = build_dspark_pair(tmp_path)
    drafter = without_weights(drafter, tmp_path / "dspark_gemma")
    config = json.loads((drafter / "config.json").read_text())
    (drafter / "config.json").write_text(json.dumps(config | {"markov_head_type": "rnn"}))
    refused = check_draft(str(target), str(drafter))
    assert not refused.compatible and refused.reasons[0].startswith(
        "dspark_gemma is a DSpark drafter SpecChat cannot run yet: a rnn Markov head")


def test_a_draft_model_is_still_judged_by_its_tokenizer(tiny_dirs) -> None:
    assert check_draft(str(tiny_dirs[0]), str(tiny_dirs[1])).compatible



def test_a_draft_model_as_costly_as_the_target_is_refused_with_the_reason(tiny_dirs, tmp_path: Path) -> None:
    """The picker offered and selected qwen-coder-1.5b as the draft of qwen-coder-0.5b (and a bf16 folder's own Q4
    GGUF, as costly a token): only drafts that cost less than the target are offered."""
    target, draft = tiny_dirs
    assert check_draft(str(target), str(draft)).compatible
    bigger = check_draft(str(draft), str(target))
    counts = [parameters_per_token(json.loads((d / "config.json").read_text())) for d in (target, draft)]
    assert counts[0] > counts[1] > 0 and not bigger.compatible
    assert bigger.reasons == [f"as costly as the target or more ({round(counts[0] / 1000)}K parameters a token against the "
                              f"target's {round(counts[1] / 1000)}K): a draft must be a smaller, faster model"]
    copy = shutil.copytree(target, tmp_path / "copy-of-the-target")  # as a quantized copy: the same shape
    assert not check_draft(str(target), str(copy)).compatible


def test_a_vision_target_is_offered_the_drafters_made_for_its_language_model(vision_dir: Path, tmp_path: Path) -> None:
    """Each kind's check reads a vision target's config as a text target's (its language model's width, vocabulary
    and layers): the picker offers the drafters made for it, and refuses one made for another target."""
    from engine.fixtures import tiny_vision_drafters as fixtures

    for build in (fixtures.build_vision_dflash, fixtures.build_vision_dspark, fixtures.build_vision_eagle3):
        assert check_draft(str(vision_dir), str(without_weights(build(vision_dir, tmp_path), tmp_path / "json"))).compatible
        shutil.rmtree(tmp_path / "json")
    assert built_in_drafters(fixtures.build_vision_mtp(vision_dir, tmp_path / "tiny-vl-mtp")) == ("mtp",)
    assert built_in_drafters(vision_dir) == ()
    other = build_dflash_pair(tmp_path)[1]
    verdict = check_draft(str(vision_dir), str(other))
    assert not verdict.compatible and "cannot draft for tiny-vl: its vocabulary has" in verdict.reasons[0]


def test_a_gguf_target_is_imported_first_and_its_import_reported(tiny_dirs, tmp_path: Path, monkeypatch) -> None:
    """The picker's check imported a GGUF target without a word ("0 of 1 checked…" for minutes): each stage of the
    import reaches the caller, as a load's do."""
    from tests.engine.models.test_gguf_import import TYPES, _write_synthetic

    monkeypatch.setenv("SPECCHAT_CACHE", str(tmp_path / "cache"))
    gguf, _, _ = _write_synthetic(tmp_path, TYPES)
    stages: list[tuple[str, int, int]] = []
    check_draft(str(gguf), str(tiny_dirs[1]), lambda stage, done, total: stages.append((stage, done, total)))
    assert stages[0] == ("Reading tiny.gguf", 0, 0) and ("Converting the tokenizer of tiny.gguf", 1, 1) in stages
    assert any(stage == "Importing tiny.gguf" and 0 < done <= total for stage, done, total in stages)
    stages.clear()
    check_draft(str(gguf), str(tiny_dirs[1]), lambda *report: stages.append(report))
    assert stages == []  # imported once
