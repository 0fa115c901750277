"""Loading a target's built-in MTP head from the checkpoint as published, weights mlx-lm's loaders drop included.

Where the head's weights are:
- Qwen3.5/3.6/3.8 (`mtp_num_hidden_layers`) and Qwen3-Next (`num_nextn_predict_layers`): `mtp.fc`,
  `mtp.pre_fc_norm_embedding`, `mtp.pre_fc_norm_hidden`, `mtp.layers.N.*` (an attention decoder layer) and
  `mtp.norm`, in the model's shards (mlx-lm 0.32.2's sanitize drops them) or in MTPLX's sidecar
  `mtp.safetensors` (also `mtp/weights.safetensors`, `model-mtp.safetensors`, or the file
  `mlx_lm_extra_tensors.mtp_file` names);
- MiMo (`num_nextn_predict_layers`): `model.mtp_layers.N.{token_layernorm, hidden_layernorm, input_proj,
  final_layernorm}` around a decoder layer's weights; the head is its first layer, concat [hidden, embedding];
- DeepSeek-V3 and GLM append their heads as `model.layers.{num_hidden_layers + i}`: recognised, refused.
Experts stored one by one (original Qwen3-Next and Qwen3.5-MoE heads) are stacked as mlx-lm's layers hold them;
a head stored quantized (an MLX conversion that kept it) is quantized alike.

RMSNorm gains: Qwen's original (Hugging Face) checkpoints store them zero-centred (the norm multiplies by 1 + w)
and mlx-lm adds the 1 to the trunk's when it converts; MLX's RMSNorm multiplies by w, so the head's gains need
the 1 too, exactly when the trunk's did: the shards are in the original layout (a GatedDeltaNet conv1d kernel
not yet transposed, or Qwen3-Next's experts not yet stacked). A sidecar says so in config.json
(`mtplx_mtp_norm_encoding: "delta"`), or is judged as MTPLX judges it: zero-centred gains average near 0,
absolute ones near 1 (the q/k norms aside, which are large either way).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from ..arrays import load_arrays
from ..drafter_kinds import kind
from ..errors import UnsupportedModelError
from ..models.folder_kind import folder_name
from .mtp import Concat, MTPHead, head_blocks, text_model
from .weights import load_strictly

SIDECARS = ("mtp.safetensors", "mtp/weights.safetensors", "model-mtp.safetensors")
QWEN_PREFIXES = ("mtp.", "language_model.mtp.", "model.mtp.")
MIMO_NAMES = {"token_layernorm": "pre_fc_norm_embedding", "hidden_layernorm": "pre_fc_norm_hidden",
              "input_proj": "fc", "final_layernorm": "norm"}
NORM_SUFFIXES = ("pre_fc_norm_embedding.weight", "pre_fc_norm_hidden.weight", "input_layernorm.weight",
                 "post_attention_layernorm.weight", "q_norm.weight", "k_norm.weight")
DELTA_ENCODINGS = {"delta", "delta_plus_one", "mlx_delta"}
_EXPERT = re.compile(r"^(?P<layer>.+\.mlp)\.experts\.(?P<expert>\d+)\.(?P<part>\w+_proj\.(?:weight|scales|biases))$")
DELTA_MEAN = 0.5  # mean gain below which a sidecar's norms are zero-centred (MTPLX's threshold for these norms)


def mtp_layer_count(config: dict[str, Any]) -> int:
    """How many MTP layers the config declares (0: none): Qwen3.5/3.6's `mtp_num_hidden_layers` (in
    `text_config` for the multimodal checkpoints), Qwen3-Next's and MiMo's `num_nextn_predict_layers` (the keys
    of the "mtp" row)."""
    text = config.get("text_config") or {}
    for key in kind("mtp").target_keys:
        value = text.get(key) or config.get(key)
        if value:
            return int(value)
    return 0


def load_mtp_head(path: Path, target: nn.Module, config: dict[str, Any]) -> MTPHead:
    """The MTP head of the target loaded from `path` (its folder), or one line saying why there is none."""
    path = Path(path)
    count = mtp_layer_count(config)
    if count <= 0:
        raise UnsupportedModelError(
            f"{folder_name(path)} has no built-in MTP head (its config declares no mtp_num_hidden_layers or "
            "num_nextn_predict_layers). Pick another drafter: a draft model, or lookup."
        )
    raw, sidecar = _raw_weights(path, config)
    weights, concat = _head_weights(raw, path, config, count)
    weights = _stacked_experts(weights)
    if _zero_centred(weights, raw, path, config, sidecar):
        weights = {k: v + 1.0 if _is_norm(k) and v.ndim == 1 else v for k, v in weights.items()}
    text = text_model(target)
    layers = count if concat == "embedding_hidden" else 1  # MiMo: each layer is a head of its own; drafting uses the first
    head = MTPHead(head_blocks(target, layers), text.args.hidden_size, text.args.rms_norm_eps, concat)
    _quantize_like(head, weights, config)
    load_strictly(head, weights, path, "MTP weights do not fit its config")
    return head


def _raw_weights(path: Path, config: dict[str, Any]) -> tuple[dict[str, mx.array], bool]:
    """Every tensor of the sidecar if there is one (True), else of the shards (False)."""
    extra = config.get("mlx_lm_extra_tensors")
    names = ([extra["mtp_file"]] if isinstance(extra, dict) and extra.get("mtp_file") else []) + list(SIDECARS)
    for name in names:
        if (path / name).is_file():
            return load_arrays(path / name), True
    files = sorted(path.glob("model*.safetensors"))
    return load_arrays(*files), False


def _head_weights(raw: dict[str, mx.array], path: Path, config: dict[str, Any], count: int) -> tuple[dict[str, mx.array], Concat]:
    """The head's weights under MTPHead's names, and its concat order."""
    qwen = {_strip(k): v for k, v in raw.items() if k.startswith(QWEN_PREFIXES)}
    if qwen:
        return qwen, "embedding_hidden"
    mimo = _mimo_weights(raw)
    if mimo:
        return mimo, "hidden_embedding"
    layers = int((config.get("text_config") or config).get("num_hidden_layers") or 0)
    if any(k.startswith(f"model.layers.{layers + i}.") for k in raw for i in range(count)):
        raise UnsupportedModelError(
            f"{folder_name(path)} keeps its MTP head as extra decoder layers (DeepSeek/GLM style), which SpecChat does "
            "not draft with yet. Draft with a draft model or prompt lookup instead."
        )
    raise UnsupportedModelError(
        f"{folder_name(path)} declares an MTP head but its weights are not in the folder (converted by a tool that "
        "dropped the mtp.* tensors). Use a conversion that keeps them, or MTPLX's mtp.safetensors beside the model."
    )


def _strip(key: str) -> str:
    return next(key.removeprefix(p) for p in QWEN_PREFIXES if key.startswith(p))


def _mimo_weights(raw: dict[str, mx.array]) -> dict[str, mx.array]:
    """MiMo's first MTP layer renamed: its own norms and projection, and its decoder layer as `layers.0`."""
    named = {}
    for key, value in raw.items():
        if not key.startswith("model.mtp_layers.0.") or "rotary_emb" in key:
            continue
        rest = key.removeprefix("model.mtp_layers.0.")
        first, _, tail = rest.partition(".")
        named[f"{MIMO_NAMES[first]}.{tail}" if first in MIMO_NAMES else f"layers.0.{rest}"] = value
    return named


def _stacked_experts(weights: dict[str, mx.array]) -> dict[str, mx.array]:
    """Experts stored one by one (`mlp.experts.E.gate_proj.weight`, the original layout of Qwen3-Next and
    Qwen3.5-MoE heads) stacked as mlx-lm's SwitchGLU holds them (`mlp.switch_mlp.gate_proj.weight`)."""
    groups: dict[str, dict[int, mx.array]] = {}
    rest = {}
    for key, value in weights.items():
        match = _EXPERT.match(key)
        if match:
            groups.setdefault(f"{match['layer']}.switch_mlp.{match['part']}", {})[int(match["expert"])] = value
        else:
            rest[key] = value
    for name, experts in groups.items():
        rest[name] = mx.stack([experts[e] for e in sorted(experts)])
    return rest


def _is_norm(key: str) -> bool:
    return key.endswith(NORM_SUFFIXES) or key == "norm.weight"


def _zero_centred(weights: dict[str, mx.array], raw: dict[str, mx.array], path: Path, config: dict[str, Any],
                  sidecar: bool) -> bool:
    """Whether the head's RMSNorm gains are stored without their +1 (see the module doc)."""
    declared = [config.get("mtplx_mtp_norm_encoding"), config.get("mtp_norm_encoding"),
                (config.get("mtplx_mtp_quantization") or {}).get("norm_encoding")]
    if any(str(d).strip().lower() in DELTA_ENCODINGS for d in declared if d is not None):
        return True
    if not sidecar:
        return _original_layout(raw)
    gains = [v for k, v in weights.items() if k.endswith(NORM_SUFFIXES[:4]) and v.ndim == 1]
    return bool(gains) and float(mx.mean(mx.concatenate([g.astype(mx.float32) for g in gains]))) < DELTA_MEAN


def _original_layout(raw: dict[str, mx.array]) -> bool:
    """Whether the shards are a Hugging Face original that mlx-lm converts on load (and whose norms it shifts)."""
    unconverted_conv = any("conv1d.weight" in k and v.ndim == 3 and v.shape[-1] != 1 for k, v in raw.items())
    unstacked_experts = any(re.search(r"^model\.layers\.\d+\.mlp\.experts\.0\.", k) for k in raw)
    return unconverted_conv or unstacked_experts


def _quantize_like(head: MTPHead, weights: dict[str, mx.array], config: dict[str, Any]) -> None:
    """Quantize the head's layers that are stored quantized (an MLX conversion that kept the head)."""
    quantization = config.get("quantization") or config.get("quantization_config") or {}
    if not any(k.endswith(".scales") for k in weights) or "bits" not in quantization:
        return
    nn.quantize(head, group_size=int(quantization.get("group_size", 64)), bits=int(quantization["bits"]),
                class_predicate=lambda p, m: hasattr(m, "to_quantized") and f"{p}.scales" in weights)

