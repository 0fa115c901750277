"""Finding and loading models: each way a name can be wrong gets a one-line error that says what to do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlx.core as mx
import pytest

from engine.errors import ModelNotFoundError, NotAModelError, UnsupportedModelError
from engine.models.loading import load_model, looks_like_path, resolve_model_path


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match=r"No model at .*nowhere: the path does not exist"):
        resolve_model_path(str(tmp_path / "nowhere"))


def test_folder_without_a_model(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(NotAModelError, match="has no config.json and no \\*.safetensors weights"):
        resolve_model_path(str(tmp_path))


def test_folder_with_config_but_no_weights(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(NotAModelError, match="has no \\*.safetensors weights"):
        resolve_model_path(str(tmp_path))


def test_pytorch_weights_alone_point_to_mlx_lm_convert(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 64)
    with pytest.raises(NotAModelError, match=r"holds PyTorch weights \(pytorch_model.bin\), which MLX cannot read: "
                                             r"convert it with `mlx_lm.convert --hf-path "):
        resolve_model_path(str(tmp_path))


def sharded_copy(source: Path, out: Path) -> Path:
    """The model split over two shards with the index Hugging Face writes beside them."""
    out = shutil.copytree(source, out, ignore=shutil.ignore_patterns("*.safetensors"))
    weights = mx.load(str(source / "model.safetensors"))
    names = sorted(weights)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2], "model-00002-of-00002.safetensors": names[len(names) // 2 :]}
    for shard, keys in shards.items():
        mx.save_safetensors(str(out / shard), {k: weights[k] for k in keys})
    weight_map = {k: shard for shard, keys in shards.items() for k in keys}
    (out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return out


def test_a_copy_missing_a_shard_names_what_is_missing(tiny_dirs, tmp_path: Path) -> None:
    """It used to load until mlx-lm found parameters missing."""
    model = sharded_copy(tiny_dirs[0], tmp_path / "half-copied")
    load_model(str(model))  # whole, it loads
    (model / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(NotAModelError) as error:
        load_model(str(model))
    assert str(error.value) == (
        "half-copied is incomplete: its weights index names 2 files and 1 of them are missing "
        "(model-00002-of-00002.safetensors). Copy or download the missing files."
    )


def test_a_conversion_without_a_tokenizer_says_to_copy_one_in(tiny_dirs, tmp_path: Path) -> None:
    model = tmp_path / "no-tokenizer"
    model.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny_dirs[0] / name, model / name)
    with pytest.raises(NotAModelError, match="no-tokenizer has no tokenizer .*copy the tokenizer files of the model it "
                                             "was converted from into it"):
        load_model(str(model))


def test_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    f = tmp_path / "model.bin"
    f.write_bytes(b"\0")
    with pytest.raises(NotAModelError, match="is a file, not a model"):
        resolve_model_path(str(f))


def test_a_repo_id_that_is_not_downloaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError, match="is not downloaded. Download it first: `specchat-cli download"):
        resolve_model_path("mlx-community/Nope-0.5B-4bit")


def test_an_architecture_mlx_lm_cannot_run(tiny_dirs, tmp_path: Path) -> None:
    model = shutil.copytree(tiny_dirs[0], tmp_path / "m")
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "model_type": "quantum_llm"}))
    with pytest.raises(UnsupportedModelError, match="'quantum_llm' model, which this mlx-lm cannot run"):
        load_model(str(model))


def test_paths_and_repo_ids_are_told_apart() -> None:
    assert looks_like_path("./model") and looks_like_path("~/m") and looks_like_path("/a/b") and looks_like_path("x.gguf")
    assert not looks_like_path("mlx-community/Qwen2.5-0.5B-Instruct-4bit")


def test_half_precision_weights_compute_in_float32_on_the_cpu(tiny_dirs, tmp_path: Path) -> None:
    """MLX's CPU matmul uses BLAS only in float32, so bf16 weights are widened there."""
    from mlx.utils import tree_flatten

    model = shutil.copytree(tiny_dirs[0], tmp_path / "bf16")
    weights = mx.load(str(model / "model.safetensors"))
    mx.save_safetensors(str(model / "model.safetensors"), {k: v.astype(mx.bfloat16) for k, v in weights.items()})
    loaded = load_model(str(model))
    assert {v.dtype for _, v in tree_flatten(loaded.model.parameters())} == {mx.float32}
    assert loaded.context_length == 1024


def _quantized_copy(source: Path, out: Path) -> Path:
    """The model quantized by mlx-lm (4-bit, groups of 32), saved as mlx-lm saves its conversions."""
    from mlx_lm.utils import load as mlx_lm_load
    from mlx_lm.utils import quantize_model, save_config, save_model

    model, _ = mlx_lm_load(str(source))
    config = json.loads((source / "config.json").read_text())
    model, config = quantize_model(model, config, 32, 4)
    shutil.copytree(source, out, ignore=shutil.ignore_patterns("*.safetensors", "config.json"))
    save_model(out, model)
    save_config(config, out / "config.json")
    return out


def test_a_quantized_model_is_dequantized_on_the_cpu_while_it_fits(tiny_dirs, tmp_path: Path, monkeypatch) -> None:
    """MLX's CPU quantized matmul is ~7x slower than a float one, so an imported GGUF (kept quantized for the Mac)
    runs dequantized on the CPU, computing what mlx-lm's quantized model computes; one too big stays quantized."""
    import mlx.nn as nn
    from mlx_lm.utils import load as mlx_lm_load

    folder = _quantized_copy(tiny_dirs[0], tmp_path / "q4")
    quantized, _ = mlx_lm_load(str(folder))
    loaded = load_model(str(folder))
    layer = loaded.model.model.layers[0].mlp.up_proj
    assert type(layer) is nn.Linear and layer.weight.dtype == mx.float32
    ids = mx.array([[1, 50, 99, 7, 200, 13, 5, 77]])
    assert mx.allclose(loaded.model(ids), quantized(ids).astype(mx.float32), atol=0.1).item()
    monkeypatch.setattr("engine.models.loading.CPU_DEQUANTIZE_SHARE", 1e-9)
    assert isinstance(load_model(str(folder)).model.model.layers[0].mlp.up_proj, nn.QuantizedLinear)


def test_loading_says_how_far_its_weights_are_then_that_the_tokenizer_loads(tiny_dirs) -> None:
    """Issue 32: a GGUF's model loaded for 30 s under a "Loading x" bar that could not say how far it was (its
    weights dequantized to float32 on the CPU), then its tokenizer loaded under the same words."""
    target, _ = tiny_dirs
    reports: list[tuple[str, int, int]] = []
    load_model(str(target), progress=lambda stage, done, total: reports.append((stage, done, total)))
    stages = list(dict.fromkeys(stage for stage, _, _ in reports))
    assert stages == [f"Loading {target.name}", f"Loading the tokenizer of {target.name}"]
    weights = [(done, total) for stage, done, total in reports if stage == stages[0] and total]
    done = [d for d, _ in weights]
    assert len(weights) > 2 and done == sorted(done) and done[-1] == weights[0][1]
    assert reports[0] == (stages[0], 0, 0) and reports[-1] == (stages[1], 0, 0)


def test_weights_that_fail_as_they_are_read_are_named_in_one_line(tiny_dirs, monkeypatch) -> None:
    """The weights are read lazily, under the load's bar: MLX failing then (a file damaged past the header check)
    is the same one line as when mlx-lm's loader read them."""
    from engine.models import loading

    def damaged(model, progress) -> None:
        raise RuntimeError("[load_safetensors] Failed to read 4096 bytes")

    monkeypatch.setattr(loading, "_evaluate", damaged)
    with pytest.raises(NotAModelError, match=r"weights could not be read \(\[load_safetensors\] Failed .*Download or copy"):
        load_model(str(tiny_dirs[0]))


def test_a_model_whose_float32_copy_takes_under_two_fifths_of_ram_is_dequantized(tiny_dirs, tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """Qwen2.5-Coder-1.5B's float32 copy is 7.1 GB, 30% of a 24 GB machine: at a quarter it stayed 4-bit, and its
    first prefill chunk had not finished after 15 minutes (MLX's CPU quantized matmul)."""
    import mlx.nn as nn
    from mlx_lm.utils import load as mlx_lm_load

    from engine.models.loading import float32_bytes

    folder = _quantized_copy(tiny_dirs[0], tmp_path / "q4")
    ram_gb = float32_bytes(mlx_lm_load(str(folder))[0]) / 0.3 / 1e9
    monkeypatch.setattr("engine.models.loading.physical_memory_gb", lambda: ram_gb)
    assert type(load_model(str(folder)).model.model.layers[0].mlp.up_proj) is nn.Linear
