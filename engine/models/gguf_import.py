"""Import a GGUF file (llama.cpp's format) as an MLX model folder.

Users have GGUF collections, and a GGUF is the one real model a package registry carries for our tests. We read
it with the `gguf` package (which also dequantizes every block format), map llama.cpp's tensor names back to the
Hugging Face names mlx-lm loads, undo what llama.cpp's converter changed (the rotary permutation of llama's q/k
projections; Gemma's norms, stored as 1 + w), and write bf16 safetensors, a config.json and a tokenizer rebuilt
from the file's metadata with its chat template. Architectures: llama, qwen2, qwen3, gemma3 (`ARCHITECTURES`).

A `.gguf` path is accepted wherever a model path is: `imported_model_path` converts it once into a cache folder
keyed by the file's content, and later loads reuse that folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import NotAModelError, UnsupportedModelError

SUPPORTED_TENSOR_TYPES = ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K")

# llama.cpp name (after "blk.N.") -> Hugging Face name (after "model.layers.N.")
_BLOCK_NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {
    "token_embd": "model.embed_tokens",
    "output_norm": "model.norm",
    "output": "lm_head",
}


@dataclass(frozen=True)
class Architecture:
    """How one llama.cpp architecture maps back to mlx-lm's model.

    Attributes:
        hf_class, model_type: what config.json names it.
        block_names: names that differ from `_BLOCK_NAMES` (Gemma's four norms per block).
        rotary_permuted: llama.cpp reorders q/k rows (llama only; the others use NeoX rotary layout).
        norm_shift: subtracted from every norm weight (Gemma's RMSNorm multiplies by 1 + w; llama.cpp stores 1 + w).
    """

    hf_class: str
    model_type: str
    block_names: dict[str, str] = field(default_factory=dict)
    rotary_permuted: bool = False
    norm_shift: float = 0.0


ARCHITECTURES = {
    "llama": Architecture("LlamaForCausalLM", "llama", rotary_permuted=True),
    "qwen2": Architecture("Qwen2ForCausalLM", "qwen2"),
    "qwen3": Architecture("Qwen3ForCausalLM", "qwen3"),
    "gemma3": Architecture(
        "Gemma3ForCausalLM",
        "gemma3_text",
        block_names={
            "ffn_norm": "pre_feedforward_layernorm",
            "post_attention_norm": "post_attention_layernorm",
            "post_ffw_norm": "post_feedforward_layernorm",
        },
        norm_shift=1.0,
    ),
}
SUPPORTED_ARCHITECTURES = tuple(ARCHITECTURES)
# What llama.cpp assumes for Gemma 3 files that do not say: every sixth layer global, local rotary base 10000.
GEMMA3_SLIDING_PATTERN, GEMMA3_LOCAL_ROPE_BASE, GEMMA3_27B_BLOCKS = 6, 10000.0, 62

ProgressCallback = Callable[[int, int], None]


def default_cache_dir() -> Path:
    """Where imported models live: $SPECCHAT_CACHE or ~/.cache/specchat, under gguf/."""
    root = os.environ.get("SPECCHAT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "specchat")
    return Path(root) / "gguf"


def file_fingerprint(path: Path) -> str:
    """A short content key: the size and hashes of the first and last MiB (hashing 10 GB would take minutes)."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        digest.update(f.read(1 << 20))
        if size > 2 << 20:
            f.seek(-(1 << 20), os.SEEK_END)
            digest.update(f.read(1 << 20))
    return digest.hexdigest()[:16]


def imported_model_path(
    gguf_path: str | os.PathLike[str],
    cache_dir: Path | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """The MLX folder for a GGUF file, importing it on first use."""
    source = Path(gguf_path).expanduser().resolve()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", source.stem)
    out = (cache_dir or default_cache_dir()) / f"{stem}-{file_fingerprint(source)}"
    if not (out / "config.json").exists():
        import_gguf(source, out, progress=progress)
    return out


def import_gguf(
    gguf_path: str | os.PathLike[str], out_dir: str | os.PathLike[str], progress: ProgressCallback | None = None
) -> Path:
    """Convert a GGUF file into an MLX model folder at `out_dir` and return it.

    The folder is written under a temporary name and renamed when complete, so an interrupted import never
    leaves a folder that a later load would trip on.
    """
    import gguf

    source = Path(gguf_path)
    out = Path(out_dir)
    try:
        reader = gguf.GGUFReader(source)
    except (ValueError, OSError) as e:
        raise NotAModelError(f"{source} is not a readable GGUF file ({e}). Re-download it or pick another file.") from e
    metadata = _metadata(reader)
    arch = metadata.get("general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise UnsupportedModelError(
            f"{source.name} is a {arch!r} model; GGUF import supports {', '.join(SUPPORTED_ARCHITECTURES)}. "
            "Use an MLX version of this model from the Hugging Face hub instead."
        )
    config = _config(metadata, reader, arch)

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        _write_weights(reader, config, arch, staging / "model.safetensors", progress)
        (staging / "config.json").write_text(json.dumps(config, indent=2))
        _write_tokenizer(metadata, arch, staging)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _metadata(reader: Any) -> dict[str, Any]:
    """The key/value metadata as Python values (strings, numbers, lists)."""
    values = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        values[key] = field.contents()
    return values


def _config(metadata: dict[str, Any], reader: Any, arch: str) -> dict[str, Any]:
    """A Hugging Face config.json for mlx-lm, from llama.cpp's metadata keys."""
    tensors = {t.name: t for t in reader.tensors}

    def get(key: str, default: Any = None) -> Any:
        return metadata.get(f"{arch}.{key}", default)

    hidden = int(get("embedding_length"))
    heads = int(get("attention.head_count"))
    head_dim = int(get("attention.key_length", hidden // heads))
    config: dict[str, Any] = {
        "architectures": [ARCHITECTURES[arch].hf_class],
        "model_type": ARCHITECTURES[arch].model_type,
        "hidden_size": hidden,
        "intermediate_size": int(get("feed_forward_length")),
        "num_hidden_layers": int(get("block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(get("attention.head_count_kv", heads)),
        "rms_norm_eps": float(get("attention.layer_norm_rms_epsilon", 1e-6)),
        "rope_theta": float(get("rope.freq_base", 10000.0)),
        "max_position_embeddings": int(get("context_length", 4096)),
        "vocab_size": int(tensors["token_embd.weight"].shape[-1]),
        "tie_word_embeddings": "output.weight" not in tensors,
        "torch_dtype": "bfloat16",
    }
    if head_dim != hidden // heads or arch in ("qwen3", "gemma3"):
        config["head_dim"] = head_dim
    if arch == "gemma3":
        config.update(_gemma3_config(get, hidden, heads, head_dim))
    for name in ("bos_token_id", "eos_token_id"):
        value = metadata.get(f"tokenizer.ggml.{name}")
        if value is not None:
            config[name] = int(value)
    end_of_turn = metadata.get("tokenizer.ggml.eot_token_id")  # chat models end turns here (Gemma's <end_of_turn>)
    if end_of_turn is not None and int(end_of_turn) != config.get("eos_token_id"):
        config["eos_token_id"] = [i for i in (config.get("eos_token_id"), int(end_of_turn)) if i is not None]
    if "rope_freqs.weight" in tensors:
        raise UnsupportedModelError(
            "This GGUF uses llama-3.1-style rope frequency factors, which the importer does not reconstruct yet. "
            "Use the model's MLX version from the Hugging Face hub instead."
        )
    return config


def _gemma3_config(get: Callable[[str, Any], Any], hidden: int, heads: int, head_dim: int) -> dict[str, Any]:
    """Gemma 3's sliding windows and attention scale, with llama.cpp's defaults where the file is silent."""
    pattern = get("attention.sliding_window_pattern", GEMMA3_SLIDING_PATTERN)
    if isinstance(pattern, list):  # one flag per layer, True where the layer slides: its period
        pattern = next((i + 1 for i, slides in enumerate(pattern) if not slides), len(pattern))
    blocks = int(get("block_count"))
    config: dict[str, Any] = {
        "sliding_window": int(get("attention.sliding_window", 4096)),
        "sliding_window_pattern": int(pattern),
        "rope_local_base_freq": float(get("rope.freq_base_swa", GEMMA3_LOCAL_ROPE_BASE)),
        # 27B scales queries by its hidden size per head, the others by the head size (as llama.cpp does).
        "query_pre_attn_scalar": hidden // heads if blocks == GEMMA3_27B_BLOCKS else head_dim,
    }
    if get("rope.scaling.type") == "linear" and get("rope.scaling.factor"):
        config["rope_scaling"] = {"rope_type": "linear", "factor": float(get("rope.scaling.factor"))}
    return config


def _hf_name(gguf_name: str, arch: str = "llama") -> str | None:
    """The Hugging Face tensor name for a llama.cpp one, or None for tensors mlx-lm does not load."""
    base, _, kind = gguf_name.rpartition(".")
    match = re.fullmatch(r"blk\.(\d+)\.(\w+)", base)
    if match:
        layer, part = match.groups()
        hf = ARCHITECTURES[arch].block_names.get(part) or _BLOCK_NAMES.get(part)
        return f"model.layers.{layer}.{hf}.{kind}" if hf else None
    hf = _TOP_NAMES.get(base)
    return f"{hf}.{kind}" if hf else None


def _unpermute_rotary(weight: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's reordering of q/k rows (it interleaves each head's rotary halves for its kernel)."""
    rows = weight.shape[0]
    return weight.reshape(n_head, rows // n_head // 2, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def _tensor_array(tensor: Any) -> np.ndarray:
    """A tensor dequantized to float32, in row-major (out_features, in_features) layout."""
    import gguf

    kind = tensor.tensor_type.name
    if kind not in SUPPORTED_TENSOR_TYPES:
        raise UnsupportedModelError(
            f"Tensor {tensor.name} is stored as {kind}; the importer reads {', '.join(SUPPORTED_TENSOR_TYPES)}. "
            "Pick a GGUF with one of those quantizations."
        )
    values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
    shape = tuple(int(d) for d in reversed(tensor.shape))
    return np.asarray(values, dtype=np.float32).reshape(shape)


def _write_weights(reader: Any, config: dict[str, Any], arch: str, path: Path, progress: ProgressCallback | None) -> None:
    """Dequantize every tensor mlx-lm needs, undo llama.cpp's changes, and save them as bf16 safetensors."""
    import mlx.core as mx

    weights = {}
    total = len(reader.tensors)
    for index, tensor in enumerate(reader.tensors):
        name = _hf_name(tensor.name, arch)
        if name is not None:
            weights[name] = mx.array(_as_hf(_tensor_array(tensor), name, config, ARCHITECTURES[arch])).astype(mx.bfloat16)
        if progress:
            progress(index + 1, total)
    mx.save_safetensors(str(path), weights, metadata={"format": "mlx"})


def _as_hf(array: np.ndarray, name: str, config: dict[str, Any], architecture: Architecture) -> np.ndarray:
    """A tensor as the Hugging Face checkpoint had it, before llama.cpp's converter changed it."""
    if architecture.rotary_permuted and name.endswith(("q_proj.weight", "k_proj.weight")):
        return _unpermute_rotary(array, config["num_attention_heads" if "q_proj" in name else "num_key_value_heads"])
    if architecture.norm_shift and name.endswith("norm.weight"):
        return array - architecture.norm_shift
    return array


def _write_tokenizer(metadata: dict[str, Any], arch: str, out: Path) -> None:
    """Rebuild the tokenizer from the GGUF vocabulary with transformers' GGUF builder and save it.

    transformers' builder knows each vocabulary family's pre-tokenizer and decoder; only its file reader needs
    torch, so we hand it the metadata the `gguf` package read.
    """
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        GGUF_TOKENIZER_MAPPING,
        add_gguf_special_tokens,
        select_tokenizer_builder,
        set_split_regex,
    )

    tokenizer_dict = {
        name: metadata[f"tokenizer.{key}"]
        for key, name in GGUF_TOKENIZER_MAPPING["tokenizer"].items()
        if f"tokenizer.{key}" in metadata
    }
    if "tokens" not in tokenizer_dict:
        raise NotAModelError("The GGUF file carries no vocabulary (tokenizer.ggml.tokens). Pick a complete model file.")
    tokenizer = select_tokenizer_builder(arch, tokenizer_dict.get("tokenizer_type"))(tokenizer_dict)
    tokenizer = add_gguf_special_tokens(tokenizer, tokenizer_dict)
    tokenizer = set_split_regex(tokenizer, tokenizer_dict)

    tokens = tokenizer_dict["tokens"]
    for role in ("bos", "eos", "unk", "pad"):
        key = "unknown_token_id" if role == "unk" else ("padding_token_id" if role == "pad" else f"{role}_token_id")
        token_id = metadata.get(f"tokenizer.ggml.{key}")
        if token_id is not None and 0 <= int(token_id) < len(tokens):
            setattr(tokenizer, f"{role}_token", tokens[int(token_id)])
    add_bos = metadata.get("tokenizer.ggml.add_bos_token")
    if add_bos is None:
        add_bos = tokenizer_dict.get("tokenizer_type") == "llama"
    if hasattr(tokenizer, "add_bos_token"):
        tokenizer.add_bos_token = bool(add_bos)
    template = metadata.get("tokenizer.chat_template")
    if template:
        tokenizer.chat_template = template
    tokenizer.save_pretrained(str(out))
