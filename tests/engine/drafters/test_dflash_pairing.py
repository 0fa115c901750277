"""A DFlash drafter pairs only with a target it can read and draft for; any other is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.drafters.dflash import read_dflash_config
from engine.drafters.dflash_pairing import check_target, named_target
from engine.errors import IncompatiblePairError
from engine.fixtures.tiny_dflash import drafter_config, target_config


def drafter_folder(tmp_path: Path, readme: str | None = None, **extra: Any) -> Path:
    folder = tmp_path / "tiny-qwen3-DFlash"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**drafter_config(target_config("qwen3")), **extra}))
    if readme is not None:
        (folder / "README.md").write_text(readme)
    return folder


def refusal(folder: Path, target: dict[str, Any], layers: int, name: str) -> str:
    with pytest.raises(IncompatiblePairError) as raised:
        check_target(folder, read_dflash_config(folder), target, layers, name)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("tiny-qwen3-DFlash is a DFlash drafter")
    return message


def test_the_target_it_was_built_for_pairs(tmp_path: Path) -> None:
    folder = drafter_folder(tmp_path)
    check_target(folder, read_dflash_config(folder), target_config("qwen3"), 4, "tiny-qwen3")


@pytest.mark.parametrize(
    "change, layers, says",
    [
        # Said for a user: "its hidden size is 32 where the drafter reads 64" said neither what was wrong nor why.
        ({"hidden_size": 32}, 4, "it was trained for another target, a model of another width (hidden size 64, this "
                                 "target's 32)"),
        ({"vocab_size": 151936}, 4, "its vocabulary has 151936 tokens where the drafter has 9"),
        ({}, 2, "it has 2 layers where the drafter taps layers [0, 2] of 4"),
    ],
    ids=["hidden", "vocabulary", "layers"],
)
def test_a_target_of_another_shape_is_refused(tmp_path: Path, change: dict[str, Any], layers: int, says: str) -> None:
    message = refusal(drafter_folder(tmp_path), {**target_config("qwen3"), **change}, layers, "other-model")
    assert f"cannot draft for other-model: {says}. Pick the target it was trained for" in message


def test_a_hybrid_targets_text_config_is_what_is_compared(tmp_path: Path) -> None:
    folder = drafter_folder(tmp_path)
    wrapped = {"model_type": "qwen3_5", "text_config": {**target_config("qwen3"), "hidden_size": 128}}
    assert "(hidden size 64, this target's 128)" in refusal(folder, wrapped, 4, "other-model")


def test_the_model_its_card_names_is_required_and_conversions_of_it_pass(tmp_path: Path) -> None:
    folder = drafter_folder(tmp_path, readme="---\nlicense: mit\nbase_model:\n  - Qwen/Qwen3-8B\n---\n# Qwen3-8B-DFlash\n")
    assert named_target(folder, {}) == "Qwen/Qwen3-8B"
    config = read_dflash_config(folder)
    check_target(folder, config, target_config("qwen3"), 4, "mlx-community/Qwen3-8B-4bit")
    message = refusal(folder, target_config("qwen3"), 4, "mlx-community/Llama-3.1-8B-Instruct-4bit")
    assert "DFlash drafter for Qwen/Qwen3-8B and cannot draft for mlx-community/Llama-3.1-8B-Instruct-4bit" in message
    assert "it was trained against Qwen/Qwen3-8B. Pick Qwen/Qwen3-8B (or a conversion of it) as the target" in message


def test_a_target_named_in_the_config_counts_too(tmp_path: Path) -> None:
    folder = drafter_folder(tmp_path, target_model="Qwen/Qwen3-4B")
    assert named_target(folder, json.loads((folder / "config.json").read_text())) == "Qwen/Qwen3-4B"
    assert "trained against Qwen/Qwen3-4B" in refusal(folder, target_config("qwen3"), 4, "Qwen3-8B")
