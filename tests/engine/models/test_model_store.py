"""Models on disk: the HF cache (listed and deleted through huggingface_hub), LM Studio's folder, remembered models."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.errors import ModelNotFoundError
from engine.models.downloads import download_model
from engine.models.model_store import (
    all_local_models,
    cached_models,
    delete_cached_model,
    forget_model,
    lm_studio_models,
    remember_model,
    remembered_models,
)


def test_cached_models_are_listed_with_sizes_and_deleted(fake_hub) -> None:
    download_model("test/tiny-target")
    download_model("test/tiny-draft")
    listed = {m.name: m for m in cached_models()}
    assert set(listed) == {"test/tiny-target", "test/tiny-draft"}
    assert listed["test/tiny-target"].size_bytes > listed["test/tiny-draft"].size_bytes > 0
    assert all(m.complete and m.source == "hf-cache" for m in listed.values())
    freed = delete_cached_model("test/tiny-draft")
    assert freed == listed["test/tiny-draft"].size_bytes
    assert [m.name for m in cached_models()] == ["test/tiny-target"]
    with pytest.raises(ModelNotFoundError, match="is not in the Hugging Face cache"):
        delete_cached_model("test/tiny-draft")


def test_an_interrupted_download_is_listed_as_incomplete_and_can_be_deleted(fake_hub) -> None:
    from tests.engine.models.test_downloads import cancelled_download

    cancelled_download(fake_hub)
    [big] = [m for m in cached_models() if m.name == "test/big"]
    assert not big.complete
    delete_cached_model("test/big")
    assert not any(m.name == "test/big" for m in cached_models())


def test_lm_studio_folder_offers_mlx_folders_and_gguf_files(tmp_path: Path, tiny_dirs) -> None:
    root = tmp_path / "lmstudio"
    shutil.copytree(tiny_dirs[0], root / "mlx-community" / "tiny-4bit")
    (root / "bartowski" / "Some-GGUF").mkdir(parents=True)
    (root / "bartowski" / "Some-GGUF" / "some-Q4_K_M.gguf").write_bytes(b"GGUF")
    (root / "junk" / "empty").mkdir(parents=True)
    found = {Path(m.name).name: m for m in lm_studio_models((root, tmp_path / "missing"))}
    assert set(found) == {"tiny-4bit", "some-Q4_K_M.gguf"}
    assert all(m.source == "lm-studio" for m in found.values())


def test_opened_models_are_remembered_across_sessions(isolated_home, tiny_dirs, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    shutil.copytree(tiny_dirs[1], gone)
    remember_model(tiny_dirs[1])
    remember_model(gone)
    remember_model(tiny_dirs[0])
    assert [m.path for m in remembered_models()] == [tiny_dirs[0], gone, tiny_dirs[1]]
    shutil.rmtree(gone)
    forget_model(tiny_dirs[1])
    assert [m.path for m in remembered_models()] == [tiny_dirs[0]]
    assert (isolated_home / "app-data" / "models.json").exists()


def test_all_local_models_lists_each_model_once(fake_hub, tiny_dirs) -> None:
    download_model("test/tiny-target")
    remember_model(tiny_dirs[1])
    names = [m.name for m in all_local_models()]
    assert names.count("test/tiny-target") == 1 and str(tiny_dirs[1].resolve()) in names


def test_a_failed_write_keeps_the_remembered_list_whole(isolated_home, tiny_dirs, monkeypatch) -> None:
    """Both writers (remember and forget) replace models.json whole: a disk that fills mid-write leaves the old
    list, and the error says what to do."""
    import errno

    from engine.errors import SpecChatError

    remember_model(tiny_dirs[1])
    remember_model(tiny_dirs[0])
    before = [m.path for m in remembered_models()]

    def half_then_full(self: Path, text: str, *args, **kwargs) -> int:
        Path.write_bytes(self, text[: len(text) // 2].encode())
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_full)
    for change in (lambda: forget_model(tiny_dirs[0]), lambda: remember_model(tiny_dirs[1])):
        with pytest.raises(SpecChatError, match="No space left on device.*Free some disk space"):
            change()
        assert [m.path for m in remembered_models()] == before


def test_other_kinds_of_model_are_listed_with_what_they_are_and_refused_when_opened(fake_hub, tiny_dirs, tmp_path) -> None:
    """A drafter downloaded next to the chat models used to vanish from every list without a word."""
    from engine.errors import NotAChatModelError
    from tests.model_folders import dflash_drafter, peft_lora_adapter

    fake_hub.add_folder("z-lab/Qwen3-8B-DFlash-b16", dflash_drafter(tmp_path / "published"))
    download_model("z-lab/Qwen3-8B-DFlash-b16")
    root = tmp_path / "lmstudio"
    peft_lora_adapter(root / "someone" / "qwen-lora")
    listed = {m.name: m for m in all_local_models() + lm_studio_models((root,))}
    drafter, adapter = listed["z-lab/Qwen3-8B-DFlash-b16"], listed[str(root / "someone" / "qwen-lora")]
    assert (drafter.complete, drafter.foreign, drafter.kind) == (False, True, "DFlash drafter")
    assert drafter.problem.startswith("z-lab/Qwen3-8B-DFlash-b16 is a DFlash drafter (z-lab), not a chat model: ")
    assert (adapter.complete, adapter.kind) == (False, "LoRA adapter") and "Qwen/Qwen2.5-0.5B-Instruct" in adapter.problem
    with pytest.raises(NotAChatModelError, match="is a LoRA adapter"):
        remember_model(root / "someone" / "qwen-lora")


def test_an_opened_drafter_folder_is_remembered_as_a_drafter_not_refused(isolated_home, tmp_path: Path) -> None:
    """A DFlash or EAGLE-3 folder is no chat model but a draft for its target: the picker must be able to list it."""
    from tests.model_folders import eagle3_speculator

    folder = eagle3_speculator(tmp_path / "Llama-3.1-8B-Instruct-speculator.eagle3").resolve()
    remember_model(folder)
    [listed] = remembered_models()
    assert (listed.path, listed.complete, listed.foreign, listed.kind) == (folder, False, True, "EAGLE-3 drafter")
