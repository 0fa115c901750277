"""GGUF import: every supported tensor type, llama's rotary permutation, the rebuilt tokenizer, clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import mlx.core as mx
import numpy as np
import pytest

from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.errors import NotAModelError, UnsupportedModelError
from engine.fixtures.tiny_models import TinySpec, build_tokenizer, random_weights
from engine.models.gguf_import import import_gguf, imported_model_path
from engine.models.loading import load_model
from engine.params import GenerationParams
from tests.gguf_files import Q, write_llama_gguf

# hidden 256 so that K-quant blocks (256 values) fit a row. Every family of block format real files hold,
# floats kept as they are, and the MLX bits each should become.
SPEC = TinySpec(num_layers=2, hidden_size=256, num_heads=4, num_kv_heads=2, intermediate_size=512)
TYPES = {
    "model.embed_tokens.weight": Q.Q8_0,
    "lm_head.weight": Q.Q6_K,
    "model.layers.0.self_attn.q_proj.weight": Q.F32,
    "model.layers.0.self_attn.k_proj.weight": Q.F16,
    "model.layers.0.self_attn.v_proj.weight": Q.Q4_0,
    "model.layers.0.self_attn.o_proj.weight": Q.Q4_1,
    "model.layers.0.mlp.gate_proj.weight": Q.Q4_K,
    "model.layers.0.mlp.up_proj.weight": Q.Q5_K,
    "model.layers.0.mlp.down_proj.weight": Q.BF16,
    "model.layers.1.self_attn.q_proj.weight": Q.F16,
    "model.layers.1.self_attn.k_proj.weight": Q.Q5_0,
    "model.layers.1.self_attn.v_proj.weight": Q.Q8_0,
    "model.layers.1.self_attn.o_proj.weight": Q.Q5_1,
    "model.layers.1.mlp.gate_proj.weight": Q.Q3_K,
    "model.layers.1.mlp.up_proj.weight": Q.IQ4_XS,
    "model.layers.1.mlp.down_proj.weight": Q.Q2_K,
}
MLX_BITS = {Q.Q8_0: 8, Q.Q6_K: 6, Q.Q4_0: 4, Q.Q4_1: 4, Q.Q4_K: 4, Q.Q5_K: 5, Q.Q5_0: 5, Q.Q5_1: 5, Q.Q3_K: 3,
            Q.IQ4_XS: 4, Q.Q2_K: 2}
LLAMA_CONFIG = {"num_hidden_layers": 2, "max_position_embeddings": 1024, "hidden_size": 256, "intermediate_size": 512,
                "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}


def _write_synthetic(root: Path, types: dict, name: str = "tiny.gguf") -> tuple[Path, dict[str, np.ndarray], Path]:
    tokenizer_dir = build_tokenizer(root / "tokenizer")
    vocab = len(json.loads((tokenizer_dir / "tokenizer.json").read_text())["model"]["vocab"])
    weights = {k: np.array(v) for k, v in random_weights(SPEC, vocab, seed=3).items()}
    path = root / name
    expected = write_llama_gguf(path, weights, LLAMA_CONFIG, tokenizer_dir, types)
    return path, expected, tokenizer_dir


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray], Path]:
    return _write_synthetic(tmp_path_factory.mktemp("gguf"), TYPES)


def imported_weights(folder: Path) -> dict[str, mx.array]:
    """Every tensor of an imported folder, over its shards."""
    weights: dict[str, mx.array] = {}
    for shard in sorted(folder.glob("*.safetensors")):
        weights.update(mx.load(str(shard)))
    return weights


def dequantized(weights: dict[str, mx.array], module: str, quantization: dict) -> np.ndarray:
    """A layer's weight as MLX computes with it."""
    if f"{module}.scales" not in weights:
        return np.array(weights[f"{module}.weight"].astype(mx.float32))
    q = quantization.get(module, quantization)
    values = mx.dequantize(weights[f"{module}.weight"], weights[f"{module}.scales"], weights.get(f"{module}.biases"),
                           group_size=q["group_size"], bits=q["bits"], mode=q["mode"])
    return np.array(values.astype(mx.float32))


def requantization_error(got: np.ndarray, want: np.ndarray, bits: int, group: int) -> float:
    """The largest error in units of its group's quantization step, after the bf16 rounding of the values,
    scales and biases is allowed for (measured at up to 1.9% of the group's largest magnitude for MLX's own
    8-bit quantization of bf16 weights: what every mlx-lm 8-bit conversion has)."""
    want_groups, got_groups = want.reshape(-1, group), got.reshape(-1, group)
    step = (want_groups.max(1) - want_groups.min(1)) / (2**bits - 1)
    slack = np.abs(want_groups).max(1) * 0.025 + 1e-7
    return float(((np.abs(got_groups - want_groups).max(1) - slack) / np.maximum(step, 1e-12)).max())


def test_every_tensor_type_imports_within_its_quantization_step(synthetic, tmp_path: Path) -> None:
    """Q5_0 (refused before), K-, i- and legacy quants are all read, kept quantized at the source's bits, and
    each value lands within one quantization step of what the `gguf` package dequantizes (MLX's affine
    quantization keeps zero on its grid, so its grid rarely matches the source's: measured median 0.43 step,
    max 0.94 on Q4_1 blocks); float tensors stay floats, exact to bf16."""
    path, expected, _ = synthetic
    out = import_gguf(path, tmp_path / "model")
    weights = imported_weights(out)
    quantization = json.loads((out / "config.json").read_text())["quantization"]
    assert {name.rsplit(".", 1)[0] for name in weights} == {name.rsplit(".", 1)[0] for name in expected}
    for name, want in expected.items():
        module, qtype = name.removesuffix(".weight"), TYPES.get(name, Q.F32)
        got = dequantized(weights, module, quantization)
        if qtype in MLX_BITS:
            assert quantization.get(module, quantization)["bits"] == MLX_BITS[qtype], name
            assert requantization_error(got, want, MLX_BITS[qtype], 32) <= 1.0, name
        else:
            assert f"{module}.scales" not in weights, name
            np.testing.assert_array_equal(got, np.array(mx.array(want).astype(mx.bfloat16).astype(mx.float32)), err_msg=name)


def test_config_and_tokenizer_come_from_the_metadata(synthetic, tmp_path: Path) -> None:
    path, _, tokenizer_dir = synthetic
    out = import_gguf(path, tmp_path / "model")
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "llama" and config["num_hidden_layers"] == 2
    assert config["num_key_value_heads"] == 2 and config["tie_word_embeddings"] is False
    model = load_model(str(out))
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    for text in ["def fibonacci(n):\n    return n", "Crème brûlée 🚀 東京", "<|im_start|>user\nHi<|im_end|>"]:
        assert model.tokenizer.encode(text) == reference.encode(text), text
    assert model.tokenizer.chat_template == reference.chat_template
    assert model.tokenizer.eos_token == "<|im_end|>"


def test_the_imported_model_generates(synthetic, tmp_path: Path) -> None:
    path, _, _ = synthetic
    folder = imported_model_path(path, cache_dir=tmp_path)
    result = generate("Hello", ModelPair(load_model(str(folder))), GenerationParams(mode="standard", max_tokens=5, temperature=0.0))
    assert len(result.tokens) == 5


def test_a_gguf_path_is_imported_once_into_the_cache(synthetic, tmp_path: Path, monkeypatch) -> None:
    path, _, _ = synthetic
    monkeypatch.setenv("SPECCHAT_CACHE", str(tmp_path))
    first = load_model(str(path)).path
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert load_model(str(path)).path == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp
    assert first.parent == tmp_path / "gguf"


def test_a_file_imported_by_the_older_importer_is_imported_again_and_the_old_folder_removed(synthetic, tmp_path: Path) -> None:
    """Folders of the bf16 importer (named without a format) would keep users on 2.3x-size copies forever."""
    from engine.models.gguf_import import file_fingerprint

    path, _, _ = synthetic
    old = tmp_path / f"{path.stem}-{file_fingerprint(path)}"
    old.mkdir()
    (old / "config.json").write_text("{}")
    folder = imported_model_path(path, cache_dir=tmp_path)
    assert folder != old and json.loads((folder / "config.json").read_text())["quantization"]
    assert not old.exists()


def test_an_unsupported_architecture_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mamba.gguf"
    writer = gguf.GGUFWriter(str(path), "mamba")
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file(); writer.write_kv_data_to_file(); writer.write_tensors_to_file(); writer.close()
    with pytest.raises(UnsupportedModelError, match="'mamba' model; GGUF import supports llama, qwen2"):
        import_gguf(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_unreadable_file_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "broken.gguf"
    path.write_bytes(b"GGUF not really")
    with pytest.raises(NotAModelError, match="is not a readable GGUF file"):
        import_gguf(path, tmp_path / "out")
    assert list(tmp_path.iterdir()) == [path]


def test_a_type_gguf_cannot_read_is_named_with_its_tensor_and_leaves_nothing(tmp_path: Path) -> None:
    """Q8_1 is an activation format the `gguf` package does not dequantize: one line names it and the tensor."""
    path, _, _ = _write_synthetic(tmp_path, {**TYPES, "model.layers.1.mlp.up_proj.weight": Q.Q8_1})
    before = set(tmp_path.iterdir())
    with pytest.raises(UnsupportedModelError, match=r"Tensor blk\.1\.ffn_up\.weight is stored as Q8_1, which the gguf package cannot"):
        import_gguf(path, tmp_path / "out")
    assert set(tmp_path.iterdir()) == before


@pytest.mark.real_weights
def test_real_smollm2_gguf_answers_paris(smollm) -> None:
    pair = ModelPair(smollm)
    result = generate("What is the capital of France?", pair, GenerationParams(mode="standard", temperature=0.0, max_tokens=24))
    assert "Paris" in result.text


@pytest.mark.parametrize("family, arch", [("qwen3", "qwen3"), ("gemma3_text", "gemma3")])
def test_qwen3_and_gemma3_files_import_as_the_model_they_were_made_from(family: str, arch: str, tmp_path: Path) -> None:
    """A tiny model of the family, written as llama.cpp's converter writes it (q/k norms; Gemma's four norms per
    block stored as 1 + w, its head tied to the embeddings, its sliding-window pattern), imports back to a model
    that computes the same logits."""
    from engine.fixtures.tiny_families import family_config, random_family_weights
    from engine.fixtures.tiny_models import copy_tokenizer
    from tests.gguf_files import write_gguf

    tokenizer_dir = build_tokenizer(tmp_path / "tokenizer")
    vocab = json.loads((tokenizer_dir / "tokenizer.json").read_text())["model"]["vocab"]
    config = family_config(family, len(vocab), vocab["<|im_end|>"])
    weights = random_family_weights(config, seed=1)
    if arch == "gemma3":
        weights.pop("lm_head.weight")  # Gemma ties its head to the embeddings
    weights = {k: v.astype(mx.bfloat16) for k, v in weights.items()}  # what the import writes
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "config.json").write_text(json.dumps(config))
    mx.save_safetensors(str(reference / "model.safetensors"), weights)
    copy_tokenizer(tokenizer_dir, reference)
    path = tmp_path / f"tiny-{arch}.gguf"
    write_gguf(path, arch, {k: np.array(v.astype(mx.float32)) for k, v in weights.items()}, config, tokenizer_dir)

    imported = load_model(str(import_gguf(path, tmp_path / "imported")))
    assert imported.config["model_type"] == config["model_type"] and imported.config["head_dim"] == config["head_dim"]
    if arch == "gemma3":
        assert (imported.config["sliding_window"], imported.config["sliding_window_pattern"]) == (16, 2)
        assert imported.config["tie_word_embeddings"] and imported.config["query_pre_attn_scalar"] == config["head_dim"]
    ids = mx.array([[1, 50, 99, 7, 200, 13, 5, 77, 42, 300, 12, 8, 9, 10, 11, 250, 260, 270, 280, 5]])
    expected = load_model(str(reference)).model(ids)
    assert mx.allclose(imported.model(ids), expected, atol=1e-3).item()
    prompt = "Hello there"
    greedy = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=12, mode="standard")
    assert generate(prompt, ModelPair(imported), greedy).tokens == generate(prompt, ModelPair(load_model(str(reference))), greedy).tokens


def test_gemma3_files_without_a_pattern_get_llama_cpps_defaults() -> None:
    """Files from before llama.cpp wrote the pattern: every sixth layer global, local rotary base 10000, and the
    27B's attention scaled by its hidden size per head."""
    from engine.models.gguf_architectures import _gemma3_config

    def getter(values: dict):
        return lambda key, default=None: values.get(key, default)

    def config(layers: int, hidden: int, heads: int, head_dim: int) -> dict:
        return {"num_hidden_layers": layers, "hidden_size": hidden, "num_attention_heads": heads, "head_dim": head_dim}

    small = _gemma3_config(getter({"attention.sliding_window": 512}), config(26, 1152, 4, 256))
    assert small == {"sliding_window": 512, "sliding_window_pattern": 6, "rope_local_base_freq": 10000.0, "query_pre_attn_scalar": 256}
    large = _gemma3_config(getter({"rope.scaling.type": "linear", "rope.scaling.factor": 8.0}), config(62, 5376, 32, 128))
    assert large["query_pre_attn_scalar"] == 168 and large["rope_scaling"] == {"rope_type": "linear", "factor": 8.0}
    flags = _gemma3_config(getter({"attention.sliding_window_pattern": [True, True, False, True]}), config(4, 64, 4, 16))
    assert flags["sliding_window_pattern"] == 3


def _family_gguf(tmp_path: Path, family: str, arch: str, quantized: dict[str, Q]) -> tuple[Path, Path]:
    """A tiny mlx-lm model of `family` written as a GGUF of `arch` with the given types (by name fragment), and
    a reference folder holding exactly the values the GGUF stores, dequantized by the `gguf` package."""
    from engine.fixtures.tiny_families import family_config, random_family_weights
    from engine.fixtures.tiny_models import copy_tokenizer
    from tests.gguf_files import write_gguf

    tokenizer_dir = build_tokenizer(tmp_path / "tokenizer")
    vocab = json.loads((tokenizer_dir / "tokenizer.json").read_text())["model"]["vocab"]
    config = family_config(family, len(vocab), vocab["<|im_end|>"])
    if family == "phi3":
        config.pop("head_dim")
    weights = {k: np.array(v.astype(mx.float32)) for k, v in random_family_weights(config, seed=1).items()}
    types = {name: qtype for name in weights for fragment, qtype in quantized.items() if fragment in name}
    path = tmp_path / f"tiny-{arch}.gguf"
    expected = write_gguf(path, arch, weights, config, tokenizer_dir, types)
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "config.json").write_text(json.dumps(config))
    mx.save_safetensors(str(reference / "model.safetensors"), {k: mx.array(v).astype(mx.bfloat16) for k, v in expected.items()})
    copy_tokenizer(tokenizer_dir, reference)
    return path, reference


# Mixed types as real files have them: 8-bit embeddings, 4/5-bit blocks, float norms and routers; gpt-oss's
# experts in MXFP4 (how its GGUFs ship).
ARCHITECTURE_TYPES = {
    "qwen3moe": {"embed_tokens": Q.Q8_0, "self_attn": Q.Q5_0, "switch_mlp": Q.Q4_0, "lm_head": Q.Q8_0},
    "phi3": {"embed_tokens": Q.Q8_0, "qkv_proj": Q.Q5_0, "gate_up_proj": Q.Q4_1, "down_proj": Q.Q4_0, "lm_head": Q.Q8_0},
    "gpt-oss": {"embed_tokens": Q.Q8_0, "q_proj.weight": Q.Q5_0, "experts.gate_proj.weight": Q.MXFP4,
                "experts.up_proj.weight": Q.MXFP4, "experts.down_proj.weight": Q.MXFP4, "lm_head": Q.Q8_0},
}


@pytest.mark.parametrize("family, arch", [("qwen3_moe", "qwen3moe"), ("phi3", "phi3"), ("gpt_oss", "gpt-oss")])
@pytest.mark.parametrize("quantized", [False, True], ids=["float", "quantized"])
def test_moe_phi3_and_gpt_oss_files_import_as_the_model_they_were_made_from(family: str, arch: str, quantized: bool, tmp_path: Path) -> None:
    """Written as llama.cpp's converter names them (stacked experts, fused Phi-3 projections, gpt-oss's sinks and
    biases): in floats the imported model computes the same logits as the reference; quantized (MXFP4 experts,
    Q4/Q5/Q8 blocks) it stays quantized and agrees with the reference on the next token almost everywhere."""
    path, reference = _family_gguf(tmp_path, family, arch, ARCHITECTURE_TYPES[arch] if quantized else {})
    folder = import_gguf(path, tmp_path / "imported")
    imported, expected = load_model(str(folder)), load_model(str(reference))
    assert imported.config["model_type"] == expected.config["model_type"]
    assert ("quantization" in imported.config) == quantized
    ids = mx.array([[1, 50, 99, 7, 200, 13, 5, 77, 42, 300, 12, 8, 9, 10, 11, 250, 260, 270, 280, 5] * 2])
    got, want = imported.model(ids), expected.model(ids)
    if quantized:
        agreement = (mx.argmax(got, -1) == mx.argmax(want, -1)).mean().item()
        assert agreement >= 0.9, agreement
    else:
        assert mx.allclose(got, want, atol=1e-2).item()


# The child reports its own peak, as the high-water mark of its own memory (VmHWM, in kB). Not RUSAGE_CHILDREN: the
# largest of every child this worker has waited for (the bundle build that goes first on a worker peaks above 3 GB).
# Nor the child's ru_maxrss: Linux counts in it the memory of the process it was forked from, up to its exec, so
# after a pytest worker had grown to 3.4 GB the import "peaked" at 3.41 GB.
PEAK_OF_IMPORT = ("import sys; from engine.models.gguf_import import import_gguf; import_gguf(sys.argv[1], sys.argv[2]); "
                  "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')))")


@pytest.mark.large_file
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak from /proc (Linux)")
def test_a_1_gb_q4_k_m_file_imports_in_bounded_memory_into_a_folder_about_its_size(tmp_path: Path) -> None:
    """The import of a ~1 GB Q4_K_M-layout file (1.6 B parameters) peaks under 2.5 GB of RSS and writes a
    folder at most 1.3x the file (measured: 0.83 GB peak and 1.10x; the bf16 importer took 7.3 GB and 3.3x),
    which mlx-lm's own loader opens."""
    import subprocess
    import sys

    from tests.gguf_files import write_large_q4_k_m

    path = tmp_path / "large.gguf"
    write_large_q4_k_m(path, build_tokenizer(tmp_path / "tokenizer"))
    out = tmp_path / "imported"
    run = subprocess.run([sys.executable, "-c", PEAK_OF_IMPORT, str(path), str(out)], check=True, capture_output=True,
                         text=True, cwd=Path(__file__).parents[3])
    peak_bytes = int(run.stdout.split()[-1]) * 1024
    assert peak_bytes < 2.5 * 2**30, f"peak RSS {peak_bytes / 2**30:.2f} GB"
    size = sum(f.stat().st_size for f in out.iterdir())
    assert size <= 1.3 * path.stat().st_size, size / path.stat().st_size
    assert len(list(out.glob("model-*-of-*.safetensors"))) > 1 and (out / "model.safetensors.index.json").exists()
    from mlx_lm.utils import load_model as mlx_lm_load_model

    model, config = mlx_lm_load_model(out, lazy=True)
    assert config["quantization"]["bits"] == 4 and config["quantization"]["model.layers.0.self_attn.v_proj"]["bits"] == 6


def test_an_import_cancelled_from_its_progress_keeps_nothing(synthetic, tmp_path: Path) -> None:
    """The app cancels an import by raising from its progress callback: the half-written folder goes, and a
    later load imports the file afresh."""
    from engine.errors import LoadCancelled

    path, _, _ = synthetic
    reports: list[tuple[str, int, int]] = []

    def cancel_after_second_weights_report(stage: str, done: int, total: int) -> None:
        reports.append((stage, done, total))
        if len(reports) == 3:
            raise LoadCancelled(stage)

    with pytest.raises(LoadCancelled):
        imported_model_path(path, cache_dir=tmp_path, progress=cancel_after_second_weights_report)
    assert list(tmp_path.iterdir()) == []
    assert reports[0] == ("Reading tiny.gguf", 0, 0)
    (_, first, total), (_, second, _) = reports[1:]
    assert reports[1][0] == "Importing tiny.gguf" and first < second < total  # bytes read so far, of the file's tensors
    assert (imported_model_path(path, cache_dir=tmp_path) / "config.json").exists()


def test_the_weights_stage_is_said_before_its_first_tensor(synthetic, tmp_path: Path) -> None:
    """Issue 32's silent import: the weights' first report came after their first tensor, the embedding (31% of
    SmolLM2's bytes, 32 s on a busy CPU), all of it under "Reading …gguf"."""
    path, _, _ = synthetic
    reports: list[tuple[str, int, int]] = []
    imported_model_path(path, cache_dir=tmp_path, progress=lambda stage, done, total: reports.append((stage, done, total)))
    total = next(total for stage, _, total in reports if stage == "Importing tiny.gguf")
    assert reports[:2] == [("Reading tiny.gguf", 0, 0), ("Importing tiny.gguf", 0, total)]


@pytest.mark.parametrize("last", [1, 2])
def test_an_import_cancelled_while_its_tokenizer_converts_keeps_nothing(synthetic, tmp_path: Path, last: int) -> None:
    """The weights at 100% were the last report: a cancel while the tokenizer converted was never seen. The
    conversion says when it starts (a stage that cannot say how far it is) and once it is done, before the rename."""
    from engine.errors import LoadCancelled

    path, _, _ = synthetic
    converting = "Converting the tokenizer of tiny.gguf"
    seen: list[tuple[int, int]] = []

    def cancel_in_conversion(stage: str, done: int, total: int) -> None:
        if stage == converting:
            seen.append((done, total))
            if len(seen) == last:
                raise LoadCancelled(stage)

    with pytest.raises(LoadCancelled):
        imported_model_path(path, cache_dir=tmp_path, progress=cancel_in_conversion)
    assert list(tmp_path.iterdir()) == [] and seen == [(0, 0), (1, 1)][:last]


def _reference_folder(expected: dict[str, np.ndarray], imported: Path, out: Path) -> Path:
    """The same weights as the GGUF stores them, dequantized by `gguf`, in a float folder beside `imported`."""
    import shutil

    out.mkdir()
    config = json.loads((imported / "config.json").read_text())
    config.pop("quantization"), config.pop("quantization_config")
    (out / "config.json").write_text(json.dumps(config))
    mx.save_safetensors(str(out / "model.safetensors"), {k: mx.array(v).astype(mx.bfloat16) for k, v in expected.items()})
    for f in imported.iterdir():
        if f.suffix != ".safetensors" and f.name != "config.json":
            shutil.copy(f, out / f.name)
    return out


def test_the_import_is_the_gguf_weights_quantized_by_mlx_lm_and_speculation_is_exact_on_it(synthetic, tmp_path: Path) -> None:
    """Q4_K, Q5_0, Q6_K, Q8_0 and float tensors: the imported model computes what mlx-lm's own quantize_model
    makes of the `gguf`-dequantized weights (same logits, same greedy text), so the only difference from those
    weights is MLX's quantization: top-1 agreement with them measured at 183 of 256 greedy tokens on this
    random fixture (flat logits; 166/256 on SmolLM2's Q4_1). Our speculation and mlx-lm's `--draft-model` then
    give standard decoding's greedy text on the imported folder."""
    import importlib

    from mlx_lm.utils import load as mlx_lm_load
    from mlx_lm.utils import quantize_model

    mlx_lm_generate = importlib.import_module("mlx_lm.generate")  # the package's `generate` is its function

    from tests.real_models import truncated_copy

    path, expected, _ = synthetic
    folder = import_gguf(path, tmp_path / "imported")
    quantization = json.loads((folder / "config.json").read_text())["quantization"]
    reference = _reference_folder(expected, folder, tmp_path / "reference")
    tokenizer = mlx_lm_load(str(reference))[1]
    default = {key: quantization[key] for key in ("group_size", "bits", "mode")}

    def as_recorded(module_path: str, module: object) -> dict | bool:
        """Quantize what the GGUF held quantized, with the bits the import recorded for it."""
        quantized = TYPES.get(f"{module_path}.weight") in MLX_BITS
        return quantization.get(module_path, default) if quantized else False

    by_mlx_lm, _ = quantize_model(mlx_lm_load(str(reference))[0], {}, 32, default["bits"], quant_predicate=as_recorded)
    imported, _ = mlx_lm_load(str(folder))
    ids = mx.array([tokenizer.encode("Hello there, tell me a long story about the sea")])
    assert mx.array_equal(imported(ids), by_mlx_lm(ids)).item()

    prompt = "Hello there"
    greedy = GenerationParams(temperature=0.0, max_tokens=48, mode="standard")
    target = load_model(str(folder))
    standard = generate(prompt, ModelPair(target), greedy).tokens
    draft = load_model(str(truncated_copy(folder, tmp_path / "draft", keep_layers=1)))
    for drafter, pair in (("lookup", ModelPair(target)), ("model", ModelPair(target, draft))):
        assert generate(prompt, pair, greedy.replace(mode="speculative", drafter=drafter)).tokens == standard, drafter
    prompt_ids = target.tokenizer.encode(prompt)
    plain = [r.token for r in mlx_lm_generate.stream_generate(imported, tokenizer, prompt_ids, max_tokens=24)]
    drafted = [r.token for r in mlx_lm_generate.stream_generate(imported, tokenizer, prompt_ids, max_tokens=24,
                                                              draft_model=mlx_lm_load(str(tmp_path / "draft"))[0])]
    assert drafted == plain


def test_llama_3_rope_frequency_factors_import_as_the_rope_scaling_they_came_from(tmp_path: Path) -> None:
    """Llama 3.1/3.2 files store their rope scaling only as per-frequency factors (`rope_freqs`); they used to be
    refused. The factors here are mlx-lm's own Llama3RoPE's, so the importer's search is checked against it."""
    from mlx_lm.models.rope_utils import Llama3RoPE

    from engine.fixtures.tiny_models import copy_tokenizer
    from tests.gguf_files import write_gguf

    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}
    config = {**LLAMA_CONFIG, "rope_theta": 500000.0, "model_type": "llama", "vocab_size": 0, "tie_word_embeddings": False}
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    rope = Llama3RoPE(head_dim, base=config["rope_theta"], scaling_config=scaling)
    factors = np.array(rope._freqs / config["rope_theta"] ** (mx.arange(0, head_dim, 2) / head_dim))
    tokenizer_dir = build_tokenizer(tmp_path / "tokenizer")
    config["vocab_size"] = len(json.loads((tokenizer_dir / "tokenizer.json").read_text())["model"]["vocab"])
    weights = {k: np.array(v) for k, v in random_weights(SPEC, config["vocab_size"], seed=3).items()}
    path = tmp_path / "llama31.gguf"
    expected = write_gguf(path, "llama", weights, config, tokenizer_dir, extra={"rope_freqs.weight": factors})
    imported = load_model(str(import_gguf(path, tmp_path / "imported")))
    assert imported.config["rope_scaling"] == scaling
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "config.json").write_text(json.dumps({**config, "rope_scaling": scaling}))
    mx.save_safetensors(str(reference / "model.safetensors"), {k: mx.array(v).astype(mx.bfloat16) for k, v in expected.items()})
    copy_tokenizer(tokenizer_dir, reference)
    ids = mx.array([[5, 9, 300, 7, 42, 99, 12] * 8])
    assert mx.allclose(imported.model(ids), load_model(str(reference)).model(ids), atol=1e-3).item()


def test_rope_factors_that_are_not_llama_3s_are_refused_in_one_line() -> None:
    from engine.models.gguf_rope import llama3_rope_scaling

    with pytest.raises(UnsupportedModelError, match="match no Llama 3 rope scaling"):
        llama3_rope_scaling(np.linspace(1.0, 3.0, 32), 64, 10000.0)
