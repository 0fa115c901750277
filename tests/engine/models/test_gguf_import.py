"""GGUF import: every supported tensor type, llama's rotary permutation, the rebuilt tokenizer, clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import mlx.core as mx
import numpy as np
import pytest

from engine.errors import NotAModelError, UnsupportedModelError
from engine.decoding.generation import generate
from engine.models.gguf_import import import_gguf, imported_model_path
from engine.models.loading import load_model
from engine.decoding.pair import ModelPair
from engine.params import GenerationParams
from engine.fixtures.tiny_models import TinySpec, build_tokenizer, random_weights
from tests.gguf_files import Q, write_llama_gguf

# hidden 256 so that K-quant blocks (256 values) fit a row.
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
    "model.layers.1.self_attn.v_proj.weight": Q.Q8_0,
}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray], Path]:
    root = tmp_path_factory.mktemp("gguf")
    tokenizer_dir = build_tokenizer(root / "tokenizer")
    vocab = len(json.loads((tokenizer_dir / "tokenizer.json").read_text())["model"]["vocab"])
    weights = {k: np.array(v) for k, v in random_weights(SPEC, vocab, seed=3).items()}
    config = {"num_hidden_layers": 2, "max_position_embeddings": 1024, "hidden_size": 256, "intermediate_size": 512,
              "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}
    path = root / "tiny.gguf"
    expected = write_llama_gguf(path, weights, config, tokenizer_dir, TYPES)
    return path, expected, tokenizer_dir


def test_every_tensor_type_imports_to_its_dequantized_values(synthetic, tmp_path: Path) -> None:
    path, expected, _ = synthetic
    out = import_gguf(path, tmp_path / "model")
    imported = mx.load(str(out / "model.safetensors"))
    assert set(imported) == set(expected)
    for name, values in expected.items():
        got = np.array(imported[name].astype(mx.float32))
        want = np.array(mx.array(values).astype(mx.bfloat16).astype(mx.float32))  # written as bf16
        np.testing.assert_array_equal(got, want, err_msg=name)


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


def test_an_unsupported_tensor_type_stops_the_import_cleanly(synthetic, tmp_path: Path, monkeypatch) -> None:
    path, _, _ = synthetic
    monkeypatch.setattr("engine.models.gguf_import.SUPPORTED_TENSOR_TYPES", ("F32",))
    with pytest.raises(UnsupportedModelError, match="is stored as .*Pick a GGUF with one of those"):
        import_gguf(path, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


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
    from engine.models.gguf_import import _gemma3_config

    def getter(values: dict):  # noqa: ANN202
        return lambda key, default=None: values.get(key, default)

    small = _gemma3_config(getter({"block_count": 26, "attention.sliding_window": 512}), 1152, 4, 256)
    assert small == {"sliding_window": 512, "sliding_window_pattern": 6, "rope_local_base_freq": 10000.0, "query_pre_attn_scalar": 256}
    large = _gemma3_config(getter({"block_count": 62, "rope.scaling.type": "linear", "rope.scaling.factor": 8.0}), 5376, 32, 128)
    assert large["query_pre_attn_scalar"] == 168 and large["rope_scaling"] == {"rope_type": "linear", "factor": 8.0}
    flags = _gemma3_config(getter({"block_count": 4, "attention.sliding_window_pattern": [True, True, False, True]}), 64, 4, 16)
    assert flags["sliding_window_pattern"] == 3
