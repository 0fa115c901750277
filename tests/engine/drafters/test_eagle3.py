"""Loading EAGLE-3 drafters as published: config keys, weight names, d2t/t2d, shared embeddings, and what is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlx.core as mx
import pytest

from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.drafters.eagle3 import load_eagle3
from engine.drafters.eagle3_model import DraftVocabulary
from engine.errors import IncompatiblePairError, NotAModelError, UnsupportedModelError
from engine.fixtures.tiny_eagle3 import DRAFT_IDS
from engine.params import GenerationParams

GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=24, drafter="eagle3", num_draft=3, adaptive=False)


def _copy(folder: Path, out: Path, config_change=None, weights_change=None) -> Path:
    """A copy of a drafter folder with its config and weights changed."""
    shutil.copytree(folder, out)
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps(config_change(config) if config_change else config))
    if weights_change:
        weights = weights_change(dict(mx.load(str(out / "model.safetensors"))))
        mx.save_safetensors(str(out / "model.safetensors"), weights)
    return out


def _drafts(pair: ModelPair) -> list[int]:
    return generate("abcabd", pair, GREEDY).tokens


def test_a_speculators_folder_loads_with_its_taps_vocabulary_and_the_targets_embeddings(eagle3_pair) -> None:
    runner = load_eagle3(eagle3_pair.folders()[1], eagle3_pair.target())
    assert runner.taps == ((1, "input"), (2, "input"), (3, "output"))  # id 4 of 4 layers: the last one's output
    assert runner.vocabulary.target_ids.tolist() == DRAFT_IDS
    assert "embed_tokens" not in runner.head and runner.embed_table is eagle3_pair.target().model.model.embed_tokens
    logits = runner.logits(mx.zeros((1, 64)))
    assert logits.shape == (1, 8) and [i for i in range(8) if logits[0, i].item() == -mx.inf] == [0, 6, 7]


def test_a_checkpoint_with_its_own_embeddings_uses_them(eagle3_pair) -> None:
    runner = load_eagle3(eagle3_pair.folders(own_embeddings=True)[1], eagle3_pair.target())
    assert "embed_tokens" in runner.head and runner.embed_table is runner.head.embed_tokens
    assert _drafts(eagle3_pair.pair(own_embeddings=True)) == _drafts(eagle3_pair.pair())  # a copy of the target's


def test_the_draft_vocabulary_maps_to_target_ids_with_minus_infinity_elsewhere() -> None:
    vocabulary = DraftVocabulary(mx.array([1, 4, 6]), 8)
    assert vocabulary.to_target(mx.array([[0.5, 1.5, 2.5]])).tolist() == [[-mx.inf, 0.5, -mx.inf, -mx.inf, 1.5, -mx.inf, 2.5, -mx.inf]]
    full = DraftVocabulary(mx.arange(4), 4)
    assert full.identity and full.to_target(mx.ones((1, 4))).tolist() == [[1.0] * 4]


def test_the_original_eagle3_layout_loads_and_drafts_alike(eagle3_pair, tmp_path: Path) -> None:
    """SafeAILab's layout: the layer's settings at the top level (LlamaForCausalLMEagle3) and layer 0 as `midlayer`."""

    def flat(config: dict) -> dict:
        return {**config.pop("transformer_layer_config"), **config, "architectures": ["LlamaForCausalLMEagle3"]}

    def midlayer(weights: dict) -> dict:
        return {k.replace("layers.0.", "midlayer."): v for k, v in weights.items()}

    folder = _copy(eagle3_pair.folders()[1], tmp_path / "EAGLE3-tiny", flat, midlayer)
    pair = ModelPair(eagle3_pair.target())
    pair.set_drafter("eagle3", folder)
    assert _drafts(pair) == _drafts(eagle3_pair.pair())


def test_a_qwen3_layer_reads_its_q_and_k_norms(eagle3_pair, tmp_path: Path) -> None:
    def qwen3(config: dict) -> dict:
        config["transformer_layer_config"]["model_type"] = "qwen3"
        return config

    def norms(weights: dict) -> dict:
        return {**weights, "layers.0.self_attn.q_norm.weight": mx.full((16,), 1.5),
                "layers.0.self_attn.k_norm.weight": mx.full((16,), 0.5)}

    runner = load_eagle3(_copy(eagle3_pair.folders()[1], tmp_path / "qwen3", qwen3, norms), eagle3_pair.target())
    assert runner.head.layers[0].self_attn.q_norm.weight.tolist() == [1.5] * 16
    with pytest.raises(NotAModelError, match="EAGLE-3 weights do not fit its config"):
        load_eagle3(_copy(eagle3_pair.folders()[1], tmp_path / "no-norms", qwen3), eagle3_pair.target())


def test_a_llama3_rope_scaling_is_honoured(eagle3_pair, tmp_path: Path) -> None:
    """mlx-vlm's drafter ignores it; a drafter for Llama 3.1 targets is trained with it."""
    from mlx_lm.models.rope_utils import Llama3RoPE

    def scaled(config: dict) -> dict:
        config["transformer_layer_config"]["rope_scaling"] = {
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64}
        return config

    runner = load_eagle3(_copy(eagle3_pair.folders()[1], tmp_path / "llama3", scaled), eagle3_pair.target())
    assert isinstance(runner.head.layers[0].self_attn.rope, Llama3RoPE)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda w: {**w, "d2t": w["d2t"][:4]}, "d2t has 4 entries for 5 draft ids"),
        (lambda w: {**w, "d2t": w["d2t"] + 3}, "d2t maps draft ids outside"),
        (lambda w: {**w, "t2d": mx.logical_not(w["t2d"])}, "t2d does not mark the ids d2t maps to"),
        (lambda w: {k: v for k, v in w.items() if k != "d2t"}, "has a reduced vocabulary .5 ids. but no d2t map"),
        (lambda w: {k: v for k, v in w.items() if k != "fc.weight"}, "EAGLE-3 weights do not fit its config"),
    ],
)
def test_a_broken_checkpoint_is_refused_in_one_line(change, message: str, eagle3_pair, tmp_path: Path) -> None:
    folder = _copy(eagle3_pair.folders()[1], tmp_path / "broken", weights_change=change)
    with pytest.raises(NotAModelError, match=message) as error:
        load_eagle3(folder, eagle3_pair.target())
    assert "\n" not in str(error.value) and str(error.value).endswith("Download it again.")


def test_a_drafter_for_another_target_is_refused_in_one_line(eagle3_pair, mtp_target, tmp_path: Path) -> None:
    folder = eagle3_pair.folders()[1]
    with pytest.raises(IncompatiblePairError, match="cannot draft for tiny-mtp-dense-0: it has 3 layers where the "
                       r"drafter taps layers \[1, 2, 4\]. Pick specchat/tiny-eagle3-target") as error:
        load_eagle3(folder, mtp_target("dense"))
    assert "\n" not in str(error.value)

    def other_verifier(config: dict) -> dict:
        config["speculators_config"]["verifier"]["name_or_path"] = "meta-llama/Llama-3.1-8B-Instruct"
        return config

    with pytest.raises(IncompatiblePairError, match="it was trained against meta-llama/Llama-3.1-8B-Instruct"):
        load_eagle3(_copy(folder, tmp_path / "other", other_verifier), eagle3_pair.target())



def test_a_target_of_another_width_is_said_for_a_user(eagle3_pair) -> None:
    """"its hidden size is 576 where the drafter reads 64" said neither what was wrong nor what to do."""
    from engine.drafters.eagle3 import check_folder

    target, drafter = eagle3_pair.folders()
    config = json.loads((target / "config.json").read_text())
    width = config["hidden_size"]
    with pytest.raises(IncompatiblePairError) as error:
        check_folder(drafter, {**config, "hidden_size": 2 * width}, config["num_hidden_layers"], "wide-model")
    assert (f"cannot draft for wide-model: it was trained for another target, a model of another width (hidden size "
            f"{width}, this target's {2 * width}). Pick specchat/tiny-eagle3-target") in str(error.value)

def test_a_layer_type_it_cannot_run_is_refused_in_one_line(eagle3_pair, tmp_path: Path) -> None:
    def gemma(config: dict) -> dict:
        config["transformer_layer_config"]["model_type"] = "gemma3_text"
        return config

    with pytest.raises(UnsupportedModelError, match="built on a 'gemma3_text' layer.*SpecChat runs Llama and Qwen3"):
        load_eagle3(_copy(eagle3_pair.folders()[1], tmp_path / "gemma", gemma), eagle3_pair.target())


