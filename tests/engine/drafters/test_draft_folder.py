"""A `--draft` folder is told apart by its config: an EAGLE-3, DFlash or DSpark drafter, or something else (a draft
model)."""

from __future__ import annotations

from pathlib import Path

from engine.drafters import default_drafter
from engine.drafters.draft_folder import dflash_version, hidden_drafter
from engine.fixtures.tiny_dspark import build_dspark_pair, specforge_layout
from tests import model_folders


def test_each_drafter_folder_is_named_with_its_kind(tmp_path: Path, tiny_dirs) -> None:
    dflash = model_folders.dflash_drafter(tmp_path / "Qwen3-8B-DFlash-b16")
    eagle3 = model_folders.eagle3_speculator(tmp_path / "Llama-3.1-8B-Instruct-speculator.eagle3")
    assert hidden_drafter(str(dflash)) == ("dflash", dflash)
    assert hidden_drafter(str(eagle3)) == ("eagle3", eagle3)
    assert hidden_drafter(str(tiny_dirs[1])) is None  # a draft model
    assert hidden_drafter(str(tmp_path / "missing")) is None and hidden_drafter(None) is None
    assert hidden_drafter("someone/not-downloaded") is None


def test_a_dspark_folder_in_either_packaging_is_a_dspark_drafter_and_drafts_by_default(tmp_path: Path) -> None:
    """SpecForge's packaging carries a `dflash_config` too: it must not be taken for a DFlash drafter."""
    deepseek = build_dspark_pair(tmp_path, "qwen3")[1]
    specforge = specforge_layout(deepseek, tmp_path / "Qwen3.8-27B-DSpark")
    assert hidden_drafter(str(deepseek)) == ("dspark", deepseek)
    assert hidden_drafter(str(specforge)) == ("dspark", specforge)
    assert default_drafter(str(deepseek)) == "dspark"


def test_dflash_versions_are_read_from_the_architecture_or_the_dflash_config() -> None:
    assert dflash_version({"architectures": ["DFlash2DraftModel"]}) == 2
    assert dflash_version({"architectures": ["DFlashDraftModel"]}) == 1
    assert dflash_version({"dflash_config": {"mask_token_id": 5}}) == 1  # an export that names no architecture
    assert dflash_version({"architectures": ["Qwen3ForCausalLM"]}) is None and dflash_version(None) is None
    assert dflash_version({"architectures": ["DFlash3DraftModel"]}) is None  # a DFlash version SpecChat cannot run
