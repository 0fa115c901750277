"""Drafts derived from a real model folder: a layer-truncated copy and a random model with its tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlx.core as mx

from engine.tiny_models import TinySpec, random_weights, truncated


def _copy_tokenizer_files(source: Path, out: Path) -> None:
    for f in source.iterdir():
        if f.is_file() and not f.name.endswith(".safetensors") and f.name != "config.json":
            shutil.copy(f, out / f.name)


def truncated_copy(source: Path, out: Path, keep_layers: int) -> Path:
    """The model's first `keep_layers` blocks with its embeddings and head: a cheap, related draft."""
    out.mkdir(parents=True, exist_ok=True)
    weights = {}
    for f in source.glob("*.safetensors"):
        weights.update(mx.load(str(f)))
    mx.save_safetensors(str(out / "model.safetensors"), truncated(weights, keep_layers), metadata={"format": "mlx"})
    config = json.loads((source / "config.json").read_text())
    config["num_hidden_layers"] = keep_layers
    (out / "config.json").write_text(json.dumps(config))
    _copy_tokenizer_files(source, out)
    return out


def random_model_like(source: Path, out: Path, seed: int = 5) -> Path:
    """A tiny random-weight model with the source's vocabulary and tokenizer: a draft that never agrees."""
    config = json.loads((source / "config.json").read_text())
    spec = TinySpec(num_layers=1, context_length=int(config.get("max_position_embeddings", 2048)))
    out.mkdir(parents=True, exist_ok=True)
    weights = random_weights(spec, int(config["vocab_size"]), seed)
    mx.save_safetensors(str(out / "model.safetensors"), weights, metadata={"format": "mlx"})
    tiny_config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": spec.num_layers,
        "num_attention_heads": spec.num_heads,
        "num_key_value_heads": spec.num_kv_heads,
        "rms_norm_eps": 1e-5,
        "max_position_embeddings": spec.context_length,
        "vocab_size": int(config["vocab_size"]),
        "tie_word_embeddings": False,
        "eos_token_id": config.get("eos_token_id"),
    }
    (out / "config.json").write_text(json.dumps(tiny_config))
    _copy_tokenizer_files(source, out)
    return out
