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
