"""Folders that are not chat models get one line before mlx-lm builds them: what each is, and what to pick instead.

Every fixture is written in its publisher's format (tests/model_folders.py). Loading goes through `load_model`,
as the CLI, the server and the app's worker do; the line must name the kind, say what to pick, and be one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.errors import NotAChatModelError
from engine.fixtures.tiny_dspark import build_dspark_pair, specforge_layout
from engine.models.compatibility import check_pair
from engine.models.folder_kind import folder_name, foreign_kind
from engine.models.loading import load_model
from tests import model_folders


def refusal(folder: Path) -> NotAChatModelError:
    with pytest.raises(NotAChatModelError) as error:
        load_model(str(folder))
    assert "\n" not in str(error.value)
    return error.value


def test_a_dflash_drafter_is_named_instead_of_a_model_args_traceback(tmp_path: Path) -> None:
    """It used to end in `TypeError: ModelArgs.__init__() missing 1 required positional argument`."""
    error = refusal(model_folders.dflash_drafter(tmp_path / "Qwen3-8B-DFlash-b16"))
    assert error.kind == "DFlash drafter"
    assert str(error).startswith("Qwen3-8B-DFlash-b16 is a DFlash drafter (z-lab), not a chat model: ")
    assert "Pick its target model as the target, and this folder as its draft." in str(error) and "--draft" not in str(error)


@pytest.mark.parametrize("packaging", ["deepseek", "specforge"])
def test_a_dspark_drafter_is_named_in_either_packaging(tmp_path: Path, packaging: str) -> None:
    """DeepSeek's `Qwen3DSparkModel` says model_type qwen3 (mlx-lm would build a Qwen3 from it); SpecForge's
    `DSparkDraftModel` carries a `dflash_config` and must not be taken for a DFlash drafter."""
    _, drafter = build_dspark_pair(tmp_path, "qwen3")
    if packaging == "specforge":
        drafter = specforge_layout(drafter, tmp_path / "Qwen3.8-27B-DSpark")
    error = refusal(drafter)
    assert error.kind == "DSpark drafter" and f"{drafter.name} is a DSpark drafter, not a chat model" in str(error)
    assert "Pick its target model as the target, and this folder as its draft." in str(error) and "--draft" not in str(error)


def test_an_eagle3_drafter_in_the_speculators_format_names_its_target(tmp_path: Path) -> None:
    error = refusal(model_folders.eagle3_speculator(tmp_path / "Llama-3.1-8B-Instruct-speculator.eagle3"))
    assert error.kind == "EAGLE-3 drafter" and "is an EAGLE-3 drafter, not a chat model" in str(error)
    assert "Pick meta-llama/Llama-3.1-8B-Instruct as the target, and this folder as its draft." in str(error) and "--draft" not in str(error)


def test_an_eagle3_drafter_as_its_authors_publish_it(tmp_path: Path, tiny_dirs) -> None:
    error = refusal(model_folders.eagle3_original(tmp_path / "EAGLE3-LLaMA3.1-Instruct-8B", tiny_dirs[0]))
    assert error.kind == "EAGLE-3 drafter" and "cannot answer on its own" in str(error)


def test_an_mlx_lm_lora_adapter_names_its_base_and_how_to_fuse_it(tmp_path: Path) -> None:
    adapter = model_folders.mlx_lm_lora_adapter(tmp_path / "adapters")
    error = refusal(adapter)
    assert error.kind == "LoRA adapter"
    assert str(error).startswith("adapters is a LoRA adapter for mlx-community/Qwen2.5-0.5B-Instruct-4bit, not a model: "
                                 "pick its base model, mlx-community/Qwen2.5-0.5B-Instruct-4bit, instead.")
    assert f"mlx_lm.fuse --model mlx-community/Qwen2.5-0.5B-Instruct-4bit --adapter-path {adapter}" in str(error)


def test_a_peft_lora_adapter_names_its_base_and_how_to_merge_it(tmp_path: Path) -> None:
    error = refusal(model_folders.peft_lora_adapter(tmp_path / "qwen-lora"))
    assert error.kind == "LoRA adapter"
    assert "pick its base model, Qwen/Qwen2.5-0.5B-Instruct, instead" in str(error)
    assert "merge_and_unload" in str(error) and "mlx_lm.convert" in str(error)


def test_a_vision_model_neither_mlx_lm_nor_mlx_vlm_has_a_module_for_is_named(tmp_path: Path, tiny_dirs) -> None:
    """mlx-vlm loads the vision models it knows (engine/models/vision.py); one it does not know is named as such."""
    folder = model_folders.idefics3_vision_model(tmp_path / "MadeUpVL", tiny_dirs[0])
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "made_up_vl"}))
    error = refusal(folder)
    assert error.kind == "vision model"
    assert str(error) == ("MadeUpVL is a vision-language model (made_up_vl) that neither mlx-lm nor mlx-vlm can load: "
                          "update mlx-vlm, or pick another model.")


@pytest.mark.parametrize("writer", [model_folders.minilm_embedding_model, model_folders.qwen3_embedding_model])
def test_an_embedding_model_is_named_even_when_mlx_lm_could_build_it(writer, tmp_path: Path, tiny_dirs) -> None:
    """Qwen3-Embedding's config is a plain qwen3 decoder: only its sentence-transformers files tell."""
    error = refusal(writer(tmp_path / "embedder", tiny_dirs[0]))
    assert error.kind == "embedding model"
    assert "is an embedding model (sentence-transformers), not a chat model" in str(error)
    assert "Pick a chat (Instruct) model" in str(error)


def test_a_bert_encoder_without_sentence_transformers_files_is_named_too(tmp_path: Path, tiny_dirs) -> None:
    folder = model_folders.minilm_embedding_model(tmp_path / "bert-base-uncased", tiny_dirs[0])
    (folder / "modules.json").unlink()
    (folder / "sentence_bert_config.json").unlink()
    error = refusal(folder)
    assert error.kind == "encoder model" and "is a bert encoder (BertModel), not a chat model" in str(error)


def without_key(source: Path, out: Path, key: str) -> Path:
    """A copy of a model whose config.json lacks one key."""
    model = shutil.copytree(source, out)
    config = json.loads((model / "config.json").read_text())
    del config[key]
    (model / "config.json").write_text(json.dumps(config))
    return model


def test_a_config_mlx_lm_fails_to_build_is_one_line_naming_type_and_architecture(tiny_dirs, tmp_path: Path) -> None:
    """The last resort, for what no check above recognises: mlx-lm's own TypeError, caught."""
    error = refusal(without_key(tiny_dirs[0], tmp_path / "odd", "hidden_size"))
    assert str(error).startswith("odd is not a chat model mlx-lm can load: building its 'llama' model "
                                 "(LlamaForCausalLM) failed (TypeError: ")
    assert "hidden_size" in str(error) and str(error).endswith("Pick a chat model's folder.")


def test_a_config_without_a_model_type_is_one_line(tiny_dirs, tmp_path: Path) -> None:
    assert "config.json names no model_type" in str(refusal(without_key(tiny_dirs[0], tmp_path / "typeless", "model_type")))


def test_a_drafter_offered_as_a_draft_is_refused_with_its_kind(tiny_dirs, tmp_path: Path) -> None:
    """The picker checks candidate drafts with check_pair: the same line, not a traceback's last words."""
    drafter = model_folders.dflash_drafter(tmp_path / "Qwen3-8B-DFlash-b16")
    with pytest.raises(NotAChatModelError, match="is a DFlash drafter"):
        check_pair(str(tiny_dirs[0]), str(drafter))


def test_chat_models_and_hub_snapshots_are_judged_by_name(tiny_dirs, tmp_path: Path) -> None:
    assert foreign_kind(tiny_dirs[0]) is None
    snapshot = tmp_path / "models--z-lab--Qwen3-8B-DFlash-b16" / "snapshots" / "3f2a9c0"
    assert folder_name(snapshot) == "z-lab/Qwen3-8B-DFlash-b16"
    assert foreign_kind(model_folders.dflash_drafter(snapshot)).message.startswith("z-lab/Qwen3-8B-DFlash-b16 is a")


# --- one rule: what a drafter folder is, asked from every path that asks ---------------------------------------

SPECULATORS = {"transformer_layer_config": {"model_type": "llama", "hidden_size": 64}, "speculators_config": {}}
# Every published layout the code knows, and three configs the picker and the loader once read differently: each
# config.json with what it is (a drafter kind SpecChat drafts with, or "model": loaded as a draft model, or refused
# by the loader as the foreign folder it is).
LAYOUTS = {
    "z-lab DFlash": ({**model_folders.DFLASH_CONFIG}, "dflash"),
    "z-lab DFlash2": ({**model_folders.DFLASH_CONFIG, "architectures": ["DFlash2DraftModel"]}, "dflash"),
    "DFlash export naming no class": ({"model_type": "qwen3", "dflash_config": {"mask_token_id": 5}}, "dflash"),
    "speculators EAGLE-3": ({"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
                             "draft_vocab_size": 32000, **SPECULATORS}, "eagle3"),
    "original EAGLE-3": ({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
                          "draft_vocab_size": 32000}, "eagle3"),
    "DeepSpec DSpark": ({"architectures": ["Qwen3DSparkModel"], "model_type": "qwen3", "draft_vocab_size": 32000},
                        "dspark"),
    "SpecForge DSpark": ({"architectures": ["DSparkDraftModel"], "model_type": "qwen3",
                          "dflash_config": {"projector_type": "dspark", "mask_token_id": 5}}, "dspark"),
    "speculators DSpark": ({"speculators_model_type": "dspark", **SPECULATORS}, "dspark"),
    "EAGLE-1/2": ({"architectures": ["LlamaForCausalLMEagle"], "model_type": "llama"}, "model"),
    "Medusa": ({"architectures": ["MedusaModel"], "medusa_num_heads": 4}, "model"),
    "a chat model": ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, "model"),
    # The three the picker and the loader disagreed on (folder_kind.drafter_family's docstring says why):
    "only draft_vocab_size": ({"model_type": "llama", "draft_vocab_size": 32000}, "eagle3"),
    "DFlash3DraftModel": ({"architectures": ["DFlash3DraftModel"], "model_type": "qwen3"}, "dflash"),
    "Eagle3Speculator with a dflash_config": ({"architectures": ["Eagle3Speculator"], "dflash_config": {},
                                               **SPECULATORS}, "eagle3"),
}


def loaded_as(folder: Path, target: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What `ModelPair.load` loads `folder` as beside `target`: the drafter kind it attaches, or "model" when it
    loads the folder as a draft model (neither is built: the rule is what is asked)."""
    from engine.decoding import pair as pair_module

    seen = []
    load = pair_module.load_model
    monkeypatch.setattr(pair_module, "load_model", lambda name, progress=None: load(name) if name == str(target)
                        else seen.append("model"))
    monkeypatch.setattr(pair_module.ModelPair, "set_drafter", lambda self, kind, path: seen.append(kind))
    pair_module.ModelPair.load(str(target), str(folder))
    return seen[0]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_folder_means_one_thing_to_the_picker_the_cli_the_server_and_the_loader(
    layout: str, tmp_path: Path, tiny_dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.models.draft_choice import drafter_for

    config, expected = LAYOUTS[layout]
    folder = tmp_path / "drafter"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    assert drafter_for(str(folder)) == expected  # the picker, the saved pair and the app's worker
    assert loaded_as(folder, tiny_dirs[0], monkeypatch) == expected  # ModelPair.load: the CLI, the server, the app
    picker_kind = foreign_kind(folder)
    if expected != "model":
        assert picker_kind is not None and "as its draft." in picker_kind.message  # the app's words, no CLI flag (issue 32)  # offered as a draft


def test_a_dflash_version_specchat_cannot_run_is_refused_in_one_line_naming_it(tmp_path: Path, tiny_dirs) -> None:
    from engine.decoding.pair import ModelPair
    from engine.errors import NotAModelError

    folder = tmp_path / "Qwen3-8B-DFlash3"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["DFlash3DraftModel"], "model_type": "qwen3"}))
    with pytest.raises(NotAModelError, match="names DFlash3DraftModel, not DFlashDraftModel or DFlash2DraftModel"):
        ModelPair.load(str(tiny_dirs[0]), str(folder))
