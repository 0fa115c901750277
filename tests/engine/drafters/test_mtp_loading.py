"""The MTP head loads from the layouts people download it in, its zero-centred gains with their +1 back, and every
folder that has no usable head says so in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import pytest
from mlx.utils import tree_flatten

from engine.drafters.mtp import MTPRunner
from engine.drafters.mtp_loading import load_mtp_head, mtp_layer_count
from engine.errors import UnsupportedModelError

GAINS = ("pre_fc_norm_embedding.weight", "pre_fc_norm_hidden.weight", "norm.weight", "input_layernorm.weight")


def _head(folder: Path, target, config: dict | None = None) -> dict[str, mx.array]:
    return dict(tree_flatten(load_mtp_head(folder, target.model, config or target.config).parameters()))


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / folder.name))


def test_zero_centred_gains_in_the_original_layout_get_their_one_back(mtp_target) -> None:
    """Qwen's own checkpoint (zero-centred gains beside an untransposed trunk) and MTPLX's sidecar (gains with
    their +1) hold the same random head: loaded, they are the same weights."""
    stored = mx.load(str(mtp_target.folder("hybrid") / "model.safetensors"))
    assert abs(float(stored["mtp.pre_fc_norm_hidden.weight"].mean())) < 0.1  # stored without the +1
    original = _head(mtp_target.folder("hybrid"), mtp_target("hybrid"))
    sidecar = _head(mtp_target.folder("hybrid-sidecar"), mtp_target("hybrid-sidecar"))
    assert original.keys() == sidecar.keys()
    assert all(mx.array_equal(original[k], sidecar[k]) for k in original)
    assert abs(float(original["pre_fc_norm_hidden.weight"].mean()) - 1) < 0.1


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "judged"])
def test_a_zero_centred_sidecar_is_shifted_whether_its_config_says_so_or_not(declared: bool, mtp_target, tmp_path) -> None:
    folder = _copy(mtp_target.folder("hybrid-sidecar"), tmp_path)
    sidecar = mx.load(str(folder / "mtp.safetensors"))
    shifted = {k: v - 1.0 if k.endswith(GAINS + ("q_norm.weight", "k_norm.weight")) else v for k, v in sidecar.items()}
    mx.save_safetensors(str(folder / "mtp.safetensors"), shifted)
    config = dict(mtp_target("hybrid-sidecar").config, **({"mtplx_mtp_norm_encoding": "delta"} if declared else {}))
    target = mtp_target("hybrid-sidecar")
    ours, theirs = _head(folder, target, config), _head(mtp_target.folder("hybrid-sidecar"), target)
    assert ours.keys() == theirs.keys() and all(mx.allclose(ours[k], theirs[k], atol=1e-6) for k in ours)


def test_a_quantized_head_loads_quantized_and_drafts_nearly_as_the_full_one(mtp_target, tmp_path, monkeypatch) -> None:
    """A conversion that kept the head quantized stores `.scales` and `.biases` beside its weights. (On the CPU a
    head this small is dequantized after loading, as targets are; kept quantized here to see what was read.)"""
    monkeypatch.setattr("engine.models.loading.CPU_DEQUANTIZE_SHARE", 0.0)
    target = mtp_target("hybrid-sidecar")
    folder = _copy(mtp_target.folder("hybrid-sidecar"), tmp_path)
    full = load_mtp_head(folder, target.model, target.config)
    quantized = load_mtp_head(folder, target.model, target.config)
    nn.quantize(quantized, group_size=32, bits=8)
    mx.save_safetensors(str(folder / "mtp.safetensors"), {f"mtp.{k}": v for k, v in tree_flatten(quantized.parameters())})
    config = dict(target.config, quantization={"group_size": 32, "bits": 8})
    loaded = load_mtp_head(folder, target.model, config)
    assert isinstance(loaded.fc, nn.QuantizedLinear)
    hidden, ids = mx.random.normal((5, 64)), mx.array([1, 2, 3, 4, 5])
    a, b = MTPRunner(full, target.model), MTPRunner(loaded, target.model)
    assert float(mx.abs(a.logits(a.feed(hidden, ids)) - b.logits(b.feed(hidden, ids))).max()) < 0.1


def test_a_target_without_a_head_says_so(mtp_target) -> None:
    target = mtp_target("hybrid")
    config = json.loads(json.dumps(target.config))
    config["text_config"]["mtp_num_hidden_layers"] = 0
    with pytest.raises(UnsupportedModelError, match="has no built-in MTP head.*Pick another drafter: a draft model, or lookup"):
        load_mtp_head(mtp_target.folder("hybrid"), target.model, config)


def test_a_conversion_that_dropped_the_head_says_so(mtp_target, tmp_path) -> None:
    folder = _copy(mtp_target.folder("hybrid-sidecar"), tmp_path)
    (folder / "mtp.safetensors").unlink()  # as mlx-lm 0.32.2 converts it
    with pytest.raises(UnsupportedModelError, match="declares an MTP head but its weights are not in the folder"):
        load_mtp_head(folder, mtp_target("hybrid-sidecar").model, mtp_target("hybrid-sidecar").config)


def test_deepseek_style_heads_appended_as_layers_are_recognised_and_refused(mtp_target, tmp_path) -> None:
    target = mtp_target("dense")
    folder = _copy(mtp_target.folder("dense"), tmp_path)
    weights = {k: v for k, v in mx.load(str(folder / "model.safetensors")).items() if "mtp_layers" not in k}
    weights["model.layers.3.eh_proj.weight"] = mx.zeros((64, 128))  # layer num_hidden_layers: DeepSeek's NextN
    mx.save_safetensors(str(folder / "model.safetensors"), weights)
    with pytest.raises(UnsupportedModelError, match="extra decoder layers \\(DeepSeek/GLM style\\)"):
        load_mtp_head(folder, target.model, target.config)


def test_the_layer_count_is_read_where_each_publisher_puts_it() -> None:
    assert mtp_layer_count({"text_config": {"mtp_num_hidden_layers": 1}}) == 1  # Qwen3.5/3.6
    assert mtp_layer_count({"num_nextn_predict_layers": 2}) == 2  # Qwen3-Next, MiMo, DeepSeek
    assert mtp_layer_count({"num_hidden_layers": 4}) == 0


def test_experts_stored_one_by_one_are_stacked_as_mlx_lm_holds_them(mtp_target, tmp_path) -> None:
    """Qwen3-Next's original checkpoints store the head's experts one by one; mlx-lm's layer holds them stacked."""
    target = mtp_target("next")
    folder = _copy(mtp_target.folder("next"), tmp_path)
    unstacked = {}
    for key, value in mx.load(str(folder / "mtp.safetensors")).items():
        if ".switch_mlp." in key:
            layer, part = key.split(".switch_mlp.")
            unstacked.update({f"{layer}.experts.{e}.{part}": value[e] for e in range(value.shape[0])})
        else:
            unstacked[key] = value
    assert any(".experts.3." in key for key in unstacked)
    mx.save_safetensors(str(folder / "mtp.safetensors"), unstacked)
    ours, theirs = _head(folder, target), _head(mtp_target.folder("next"), target)
    assert ours.keys() == theirs.keys() and all(mx.array_equal(ours[k], theirs[k]) for k in ours)
