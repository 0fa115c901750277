"""How each llama.cpp architecture maps back to the mlx-lm model it came from: tensor names and config.json.

llama.cpp's converter renames every tensor (`blk.0.attn_q.weight` for `model.layers.0.self_attn.q_proj.weight`),
stacks MoE experts into one 3-D tensor per projection, and changes a few tensors (llama's q/k rows permuted for
its rotary kernel, Gemma's norms stored as 1 + w). Here each architecture says how to undo that, and which
metadata keys become which config.json fields. Architectures: llama, qwen2, qwen3, gemma3, qwen3moe, phi3 and
gpt-oss (`ARCHITECTURES`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import UnsupportedModelError

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
# Tensors that are parameters of their own in mlx-lm, not a module's `.weight`.
_PARAMETER_NAMES = {"attn_sinks": "self_attn.sinks"}

Metadata = Callable[[str, Any], Any]


@dataclass(frozen=True)
class Architecture:
    """How one llama.cpp architecture maps back to mlx-lm's model.

    Attributes:
        hf_class, model_type: what config.json names it.
        block_names: names that differ from `_BLOCK_NAMES` (Gemma's four norms per block, the MoE experts).
        rotary_permuted: llama.cpp reorders q/k rows (llama only; the others use NeoX rotary layout).
        norm_shift: subtracted from every norm weight (Gemma's RMSNorm multiplies by 1 + w; llama.cpp stores 1 + w).
        extra_config: the architecture's own config.json fields, from its metadata.
    """

    hf_class: str
    model_type: str
    block_names: dict[str, str] = field(default_factory=dict)
    rotary_permuted: bool = False
    norm_shift: float = 0.0
    extra_config: Callable[[Metadata, dict[str, Any]], dict[str, Any]] | None = None


def _gemma3_config(get: Metadata, config: dict[str, Any]) -> dict[str, Any]:
    """Gemma 3's sliding windows and attention scale, with llama.cpp's defaults where the file is silent."""
    pattern = get("attention.sliding_window_pattern", GEMMA3_SLIDING_PATTERN)
    if isinstance(pattern, list):  # one flag per layer, True where the layer slides: its period
        pattern = next((i + 1 for i, slides in enumerate(pattern) if not slides), len(pattern))
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    extra: dict[str, Any] = {
        "sliding_window": int(get("attention.sliding_window", 4096)),
        "sliding_window_pattern": int(pattern),
        "rope_local_base_freq": float(get("rope.freq_base_swa", GEMMA3_LOCAL_ROPE_BASE)),
        # 27B scales queries by its hidden size per head, the others by the head size (as llama.cpp does).
        "query_pre_attn_scalar": hidden // heads if config["num_hidden_layers"] == GEMMA3_27B_BLOCKS else config["head_dim"],
    }
    if get("rope.scaling.type", None) == "linear" and get("rope.scaling.factor", None):
        extra["rope_scaling"] = {"rope_type": "linear", "factor": float(get("rope.scaling.factor", 1.0))}
    return extra


def _qwen3moe_config(get: Metadata, config: dict[str, Any]) -> dict[str, Any]:
    """Qwen3-MoE's experts: every layer sparse, top-k weights renormalised (as Qwen3-MoE's configs say)."""
    return {
        "num_experts": int(get("expert_count", 0)),
        "num_experts_per_tok": int(get("expert_used_count", 0)),
        "moe_intermediate_size": int(get("expert_feed_forward_length", 0)),
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "norm_topk_prob": True,
    }


def _gpt_oss_config(get: Metadata, config: dict[str, Any]) -> dict[str, Any]:
    """gpt-oss: experts, the sliding window, and YaRN rope scaling (llama.cpp keeps factor and original length;
    the betas are gpt-oss's published 32 and 1)."""
    extra: dict[str, Any] = {
        "num_local_experts": int(get("expert_count", 0)),
        "num_experts_per_tok": int(get("expert_used_count", 0)),
        "intermediate_size": int(get("expert_feed_forward_length", config["intermediate_size"])),
        "sliding_window": int(get("attention.sliding_window", 128)),
    }
    factor = get("rope.scaling.factor", None)
    if factor:
        extra["rope_scaling"] = {
            "rope_type": "yarn", "factor": float(factor), "beta_fast": 32.0, "beta_slow": 1.0,
            "original_max_position_embeddings": int(get("rope.scaling.original_context_length", 4096)),
            "truncate": False,
        }
    return extra


def _phi3_config(get: Metadata, config: dict[str, Any]) -> dict[str, Any]:
    """Phi-3's original context length (its long-context rope factors are added from their tensors)."""
    original = get("rope.scaling.original_context_length", None)
    return {"original_max_position_embeddings": int(original)} if original else {}


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
        extra_config=_gemma3_config,
    ),
    "qwen3moe": Architecture(
        "Qwen3MoeForCausalLM",
        "qwen3_moe",
        block_names={
            "ffn_gate_inp": "mlp.gate",
            "ffn_gate_exps": "mlp.switch_mlp.gate_proj",
            "ffn_up_exps": "mlp.switch_mlp.up_proj",
            "ffn_down_exps": "mlp.switch_mlp.down_proj",
        },
        extra_config=_qwen3moe_config,
    ),
    "phi3": Architecture(
        "Phi3ForCausalLM",
        "phi3",
        block_names={"attn_qkv": "self_attn.qkv_proj", "ffn_up": "mlp.gate_up_proj"},
        extra_config=_phi3_config,
    ),
    "gpt-oss": Architecture(
        "GptOssForCausalLM",
        "gpt_oss",
        block_names={
            "post_attention_norm": "post_attention_layernorm",
            "ffn_gate_inp": "mlp.router",
            "ffn_gate_exps": "mlp.experts.gate_proj",
            "ffn_up_exps": "mlp.experts.up_proj",
            "ffn_down_exps": "mlp.experts.down_proj",
        },
        extra_config=_gpt_oss_config,
    ),
}
SUPPORTED_ARCHITECTURES = tuple(ARCHITECTURES)
# What llama.cpp assumes for Gemma 3 files that do not say: every sixth layer global, local rotary base 10000.
GEMMA3_SLIDING_PATTERN, GEMMA3_LOCAL_ROPE_BASE, GEMMA3_27B_BLOCKS = 6, 10000.0, 62
# Architectures whose config always names its head size (mlx-lm's classes need it, or it differs).
_HEAD_DIM_NAMED = ("qwen3", "gemma3", "qwen3moe", "gpt-oss")


def architecture(arch: str | None, file_name: str) -> Architecture:
    """The mapping for a file's `general.architecture`, or one line saying which are supported."""
    if arch not in ARCHITECTURES:
        raise UnsupportedModelError(
            f"{file_name} is a {arch!r} model; GGUF import supports {', '.join(SUPPORTED_ARCHITECTURES)}. "
            "Use an MLX version of this model from the Hugging Face hub instead."
        )
    return ARCHITECTURES[arch]


def hf_name(gguf_name: str, arch: str = "llama") -> str | None:
    """The Hugging Face tensor name for a llama.cpp one, or None for tensors mlx-lm does not load."""
    base, _, kind = gguf_name.rpartition(".")
    match = re.fullmatch(r"blk\.(\d+)\.(\w+)", base)
    if match:
        layer, part = match.groups()
        if part in _PARAMETER_NAMES:
            return f"model.layers.{layer}.{_PARAMETER_NAMES[part]}"
        hf = ARCHITECTURES[arch].block_names.get(part) or _BLOCK_NAMES.get(part)
        return f"model.layers.{layer}.{hf}.{kind}" if hf else None
    hf = _TOP_NAMES.get(base)
    return f"{hf}.{kind}" if hf else None


def model_config(metadata: dict[str, Any], tensors: dict[str, Any], arch: str) -> dict[str, Any]:
    """A Hugging Face config.json for mlx-lm, from llama.cpp's metadata keys."""
    def get(key: str, default: Any = None) -> Any:
        return metadata.get(f"{arch}.{key}", default)

    hidden = int(get("embedding_length"))
    heads = int(get("attention.head_count"))
    head_dim = int(get("attention.key_length", hidden // heads))
    config: dict[str, Any] = {
        "architectures": [ARCHITECTURES[arch].hf_class],
        "model_type": ARCHITECTURES[arch].model_type,
        "hidden_size": hidden,
        "intermediate_size": int(get("feed_forward_length", 0)),
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
    if head_dim != hidden // heads or arch in _HEAD_DIM_NAMED:
        config["head_dim"] = head_dim
    extra = ARCHITECTURES[arch].extra_config
    if extra:
        config.update(extra(get, config))
    config.update(_special_token_ids(metadata))
    return config


def _special_token_ids(metadata: dict[str, Any]) -> dict[str, Any]:
    """bos/eos ids; a chat model's end-of-turn token counts as an end too (Gemma's <end_of_turn>)."""
    ids: dict[str, Any] = {}
    for name in ("bos_token_id", "eos_token_id"):
        value = metadata.get(f"tokenizer.ggml.{name}")
        if value is not None:
            ids[name] = int(value)
    end_of_turn = metadata.get("tokenizer.ggml.eot_token_id")
    if end_of_turn is not None and int(end_of_turn) != ids.get("eos_token_id"):
        ids["eos_token_id"] = [i for i in (ids.get("eos_token_id"), int(end_of_turn)) if i is not None]
    return ids
