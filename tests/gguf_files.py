"""Writing small GGUF files the way llama.cpp's converter does, for import tests."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np

Q = gguf.GGMLQuantizationType
# Types `gguf` cannot quantize (K-quants, i-quants): byte offsets of each block's float16 scale fields, which
# random blocks get sane values in (ggml's block layouts).
_RANDOM_BLOCKS = {
    Q.Q2_K: (80, 82), Q.Q3_K: (108,), Q.Q4_K: (0, 2), Q.Q5_K: (0, 2), Q.Q6_K: (208,),
    Q.IQ4_NL: (0,), Q.IQ4_XS: (0,), Q.IQ2_XXS: (0,), Q.IQ3_S: (0,), Q.TQ2_0: (64,), Q.Q8_1: (0, 2),
}


def llama_cpp_permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's reordering of llama q/k rows (convert_hf_to_gguf's `permute`)."""
    return weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def encode_tensor(values: np.ndarray, qtype: Q, rng: np.random.Generator) -> np.ndarray:
    """Bytes (or floats) for a tensor of this type. K- and i-quants, which `gguf` cannot quantize, get random
    blocks with sane scales; their expected values are whatever `gguf` dequantizes them to."""
    if qtype in _RANDOM_BLOCKS:
        scale_offsets = _RANDOM_BLOCKS[qtype]
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        rows, cols = values.shape
        blocks = rng.integers(0, 256, size=(rows, cols // block, size), dtype=np.uint8)
        for offset in scale_offsets:
            blocks[..., offset : offset + 2] = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
        return blocks.reshape(rows, -1)
    if qtype == Q.F32:
        return values.astype(np.float32)
    if qtype == Q.F16:
        return values.astype(np.float16)
    return gguf.quants.quantize(values.astype(np.float32), qtype)


def tokenizer_metadata(tokenizer_dir: Path) -> tuple[list[str], list[str], list[int], int]:
    data = json.loads((tokenizer_dir / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    specials = {t["content"] for t in data["added_tokens"] if t["special"]}
    types = [3 if t in specials else 1 for t in tokens]
    return tokens, merges, types, vocab["<|im_end|>"]


GGUF_ARCH = {"llama": gguf.MODEL_ARCH.LLAMA, "qwen2": gguf.MODEL_ARCH.QWEN2, "qwen3": gguf.MODEL_ARCH.QWEN3,
             "gemma3": gguf.MODEL_ARCH.GEMMA3, "qwen3moe": gguf.MODEL_ARCH.QWEN3MOE, "phi3": gguf.MODEL_ARCH.PHI3,
             "gpt-oss": gguf.MODEL_ARCH.GPT_OSS}


def _gguf_name(name: str, arch: str, blocks: int) -> str:
    """llama.cpp's name for an mlx-lm tensor, by the `gguf` package's own name map (what llama.cpp's converter
    uses), so the fixtures do not restate the importer's table. mlx-lm's stacked experts (`switch_mlp`) are the
    converter's stacked `experts`; mlx-lm's `sinks` parameter gets the `.weight` the converter adds."""
    module, _, kind = name.rpartition(".")
    if kind not in ("weight", "bias"):
        module, kind = name, "weight"
    module = module.replace(".mlp.switch_mlp.", ".mlp.experts.")
    gguf_module = gguf.TensorNameMap(GGUF_ARCH[arch], blocks).get_name(module)
    assert gguf_module, f"no llama.cpp name for {name}"
    return f"{gguf_module}.{kind}"


def _write_metadata(writer: gguf.GGUFWriter, arch: str, config: dict, tokenizer_dir: Path) -> None:
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_rope_freq_base(config["rope_theta"])
    if "head_dim" in config:
        writer.add_key_length(config["head_dim"])
        writer.add_value_length(config["head_dim"])
    if arch in ("gemma3", "gpt-oss"):
        writer.add_sliding_window(config["sliding_window"])
    if arch == "gemma3":
        writer.add_sliding_window_pattern(config["sliding_window_pattern"])
    experts = config.get("num_experts") or config.get("num_local_experts")
    if experts:
        writer.add_expert_count(experts)
        writer.add_expert_used_count(config["num_experts_per_tok"])
        writer.add_expert_feed_forward_length(config.get("moe_intermediate_size") or config["intermediate_size"])
    scaling = config.get("rope_scaling") or {}
    if scaling.get("rope_type") == "yarn":
        writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        writer.add_rope_scaling_factor(scaling["factor"])
        writer.add_rope_scaling_orig_ctx_len(scaling["original_max_position_embeddings"])
    tokens, merges, token_types, eos = tokenizer_metadata(tokenizer_dir)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_merges(merges)
    writer.add_token_types(token_types)
    writer.add_eos_token_id(eos)
    if (tokenizer_dir / "chat_template.jinja").exists():
        writer.add_chat_template((tokenizer_dir / "chat_template.jinja").read_text())


def _unpermuted_rows(values: np.ndarray, heads: int) -> np.ndarray:
    """Rows of a permuted tensor put back in HF order, found by permuting row numbers (not by restating the
    importer's inverse)."""
    order = llama_cpp_permute(np.arange(values.shape[0])[:, None], heads)[:, 0]
    return values[np.argsort(order)]


def _dequantized(data: np.ndarray, qtype: Q, shape: tuple[int, ...]) -> np.ndarray:
    """What `gguf` reads the bytes as (NaN for a type it cannot read, whose import must be refused)."""
    try:
        return gguf.quants.dequantize(data, qtype)
    except NotImplementedError:
        return np.full(shape, np.nan, dtype=np.float32)


def write_gguf(path: Path, arch: str, hf_weights: dict[str, np.ndarray], config: dict, tokenizer_dir: Path,
               types: dict[str, Q] | None = None, seed: int = 0, extra: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Write a GGUF of `arch` from mlx-lm-layout weights as llama.cpp's converter does (llama's q/k permuted,
    Gemma's norms stored as 1 + w, a tied lm_head left out, experts stacked); return what each tensor should
    import as (the stored values dequantized by `gguf`, put back in HF layout). `extra`: llama.cpp tensors
    written as they are (F32), such as `rope_freqs.weight`."""
    rng = np.random.default_rng(seed)
    types = types or {}
    writer = gguf.GGUFWriter(str(path), arch)
    _write_metadata(writer, arch, config, tokenizer_dir)
    expected = {}
    for hf_name, values in hf_weights.items():
        values = np.asarray(values, dtype=np.float32)
        heads = config["num_attention_heads" if "q_proj" in hf_name else "num_key_value_heads"]
        permuted = arch == "llama" and hf_name.endswith(("q_proj.weight", "k_proj.weight"))
        if permuted:
            values = llama_cpp_permute(values, heads)
        shifted = arch == "gemma3" and hf_name.endswith("norm.weight")
        if shifted:
            values = values + 1.0
            assert values.ndim == 1, "norms are vectors"
        qtype = types.get(hf_name, Q.F32) if values.ndim >= 2 else Q.F32
        rows = values.reshape(-1, values.shape[-1])
        data = encode_tensor(rows, qtype, rng)
        stored = data.astype(np.float32) if qtype in (Q.F32, Q.F16) else _dequantized(data, qtype, rows.shape)
        writer.add_tensor(_gguf_name(hf_name, arch, config["num_hidden_layers"]), data.reshape(*values.shape[:-1], -1),
                          raw_dtype=qtype if qtype not in (Q.F32, Q.F16) else None)
        stored = stored.reshape(values.shape)
        if permuted:
            stored = _unpermuted_rows(stored, heads)
        expected[hf_name] = stored - 1.0 if shifted else stored
    for name, values in (extra or {}).items():
        writer.add_tensor(name, np.asarray(values, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return expected


def write_llama_gguf(path: Path, hf_weights: dict[str, np.ndarray], config: dict, tokenizer_dir: Path, types: dict[str, Q], seed: int = 0) -> dict[str, np.ndarray]:
    """Write a llama GGUF from HF-layout weights; return what each HF tensor should import as."""
    return write_gguf(path, "llama", hf_weights, config, tokenizer_dir, types, seed)


# llama.cpp's Q4_K_M recipe in short: Q4_K blocks, Q6_K for half the attn_v and ffn_down tensors and the output.
Q4_K_M_TYPES = {"attn_q": Q.Q4_K, "attn_k": Q.Q4_K, "attn_output": Q.Q4_K, "ffn_gate": Q.Q4_K, "ffn_up": Q.Q4_K}


def q4_k_m_type(name: str, layer: int) -> Q:
    """The type llama.cpp's Q4_K_M gives a llama tensor (`name` its llama.cpp part, `layer` its block)."""
    if name in ("attn_v", "ffn_down"):
        return Q.Q6_K if layer % 2 == 0 else Q.Q4_K
    return Q4_K_M_TYPES[name]


def write_large_q4_k_m(path: Path, tokenizer_dir: Path, hidden: int = 2048, intermediate: int = 8192, layers: int = 24,
                       vocab: int = 32000, seed: int = 0) -> None:
    """A llama GGUF of about 1 GB laid out as a Q4_K_M file (random blocks with sane scales, F32 norms, Q6_K
    output), tensor by tensor so that writing it does not hold the whole file in memory either."""
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "llama")
    config = {"num_hidden_layers": layers, "max_position_embeddings": 4096, "hidden_size": hidden,
              "intermediate_size": intermediate, "num_attention_heads": hidden // 64, "num_key_value_heads": hidden // 256,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0}
    _write_metadata(writer, "llama", config, tokenizer_dir)
    kv = hidden // 4
    shapes = {"attn_q": (hidden, hidden), "attn_k": (kv, hidden), "attn_v": (kv, hidden), "attn_output": (hidden, hidden),
              "ffn_gate": (intermediate, hidden), "ffn_up": (intermediate, hidden), "ffn_down": (hidden, intermediate)}
    tensors = [("token_embd.weight", (vocab, hidden), Q.Q4_K), ("output.weight", (vocab, hidden), Q.Q6_K),
               ("output_norm.weight", (hidden,), Q.F32)]
    for layer in range(layers):
        tensors += [(f"blk.{layer}.{n}.weight", (hidden,), Q.F32) for n in ("attn_norm", "ffn_norm")]
        tensors += [(f"blk.{layer}.{n}.weight", shape, q4_k_m_type(n, layer)) for n, shape in shapes.items()]
    for name, shape, qtype in tensors:
        writer.add_tensor_info(name, _byte_shape(shape, qtype), np.dtype(np.float32 if qtype == Q.F32 else np.uint8),
                               _nbytes(shape, qtype), raw_dtype=None if qtype == Q.F32 else qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, shape, qtype in tensors:
        data = np.ones(shape, np.float32) if qtype == Q.F32 else encode_tensor(np.zeros(shape, np.float32), qtype, rng)
        writer.write_tensor_data(data)
    writer.close()


def _byte_shape(shape: tuple[int, ...], qtype: Q) -> tuple[int, ...]:
    return shape if qtype == Q.F32 else gguf.quant_shape_to_byte_shape(shape, qtype)


def _nbytes(shape: tuple[int, ...], qtype: Q) -> int:
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    return int(np.prod(shape)) // block * size
