"""Writing small GGUF files the way llama.cpp's converter does, for import tests."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np

Q = gguf.GGMLQuantizationType
# K-quant blocks: (bytes per 256 values, byte offsets of float16 scale fields)
_K_BLOCKS = {Q.Q4_K: (144, (0, 2)), Q.Q5_K: (176, (0, 2)), Q.Q6_K: (210, (208,))}


def llama_cpp_permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's reordering of llama q/k rows (convert_hf_to_gguf's `permute`)."""
    return weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def encode_tensor(values: np.ndarray, qtype: Q, rng: np.random.Generator) -> np.ndarray:
    """Bytes (or floats) for a tensor of this type. K-quants, which `gguf` cannot quantize, get random blocks
    with sane scales; their expected values are whatever `gguf` dequantizes them to."""
    if qtype in _K_BLOCKS:
        size, scale_offsets = _K_BLOCKS[qtype]
        rows, cols = values.shape
        blocks = rng.integers(0, 256, size=(rows, cols // 256, size), dtype=np.uint8)
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


HF_TO_GGUF_BLOCK = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}
GEMMA3_BLOCK = {"post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
                "post_feedforward_layernorm": "post_ffw_norm"}
TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}


def _gguf_name(hf_name: str, arch: str) -> str:
    if hf_name in TOP:
        return TOP[hf_name]
    layer, part = hf_name.split(".")[2], ".".join(hf_name.split(".")[3:-1])
    blocks = {**HF_TO_GGUF_BLOCK, **(GEMMA3_BLOCK if arch == "gemma3" else {})}
    return f"blk.{layer}.{blocks[part]}.{hf_name.rsplit('.', 1)[1]}"


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
    if arch == "gemma3":
        writer.add_sliding_window(config["sliding_window"])
        writer.add_sliding_window_pattern(config["sliding_window_pattern"])
    tokens, merges, token_types, eos = tokenizer_metadata(tokenizer_dir)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_merges(merges)
    writer.add_token_types(token_types)
    writer.add_eos_token_id(eos)
    writer.add_chat_template((tokenizer_dir / "chat_template.jinja").read_text())


def write_gguf(path: Path, arch: str, hf_weights: dict[str, np.ndarray], config: dict, tokenizer_dir: Path,
               types: dict[str, Q] | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """Write a GGUF of `arch` (llama, qwen3, gemma3) from HF-layout weights as llama.cpp's converter does (llama's
    q/k permuted, Gemma's norms stored as 1 + w, a tied lm_head left out); return what each HF tensor should
    import as."""
    rng = np.random.default_rng(seed)
    types = types or {}
    writer = gguf.GGUFWriter(str(path), arch)
    _write_metadata(writer, arch, config, tokenizer_dir)
    expected = {}
    for hf_name, values in hf_weights.items():
        values = np.asarray(values, dtype=np.float32)
        permuted = arch == "llama" and hf_name.endswith(("q_proj.weight", "k_proj.weight"))
        if permuted:
            heads = config["num_attention_heads" if "q_proj" in hf_name else "num_key_value_heads"]
            values = llama_cpp_permute(values, heads)
        shifted = arch == "gemma3" and hf_name.endswith("norm.weight")
        if shifted:
            values = values + 1.0
        qtype = types.get(hf_name, Q.F32) if values.ndim == 2 else Q.F32
        if permuted or shifted:
            # Exact types only: the import must then give back the original HF weight, which checks the
            # undoing without restating it here.
            assert qtype in (Q.F32, Q.F16), "keep permuted and shifted tensors exact in tests"
        data = encode_tensor(values, qtype, rng)
        writer.add_tensor(_gguf_name(hf_name, arch), data, raw_dtype=qtype if qtype not in (Q.F32, Q.F16) else None)
        if permuted or shifted:
            expected[hf_name] = np.asarray(hf_weights[hf_name], dtype=np.float32).astype(data.dtype).astype(np.float32)
        elif qtype in (Q.F32, Q.F16):
            expected[hf_name] = data.astype(np.float32)
        else:
            expected[hf_name] = gguf.quants.dequantize(data, qtype).reshape(values.shape)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return expected


def write_llama_gguf(path: Path, hf_weights: dict[str, np.ndarray], config: dict, tokenizer_dir: Path, types: dict[str, Q], seed: int = 0) -> dict[str, np.ndarray]:
    """Write a llama GGUF from HF-layout weights; return what each HF tensor should import as."""
    return write_gguf(path, "llama", hf_weights, config, tokenizer_dir, types, seed)
