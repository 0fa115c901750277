"""EAGLE-3 drafters as published: vLLM's `speculators` format (and the original EAGLE-3 layout), loaded for a target.

A speculators folder (`RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3`, written by `speculators`' trainer or
its converter) holds a `config.json` with `speculators_model_type: "eagle3"`, `architectures: ["Eagle3Speculator"]`,
`transformer_layer_config` (a Llama or Qwen3 config of the drafter's layer: `hidden_size`, `num_hidden_layers`,
heads, `vocab_size` = the target's vocabulary, `rope_theta`/`rope_scaling`), `draft_vocab_size`,
`norm_before_residual`, `norm_before_fc`, `target_hidden_size`, `eagle_aux_hidden_state_layer_ids` (the target
layers whose *input* the drafter reads; vLLM's default when absent: 2, n/2, n-3; n itself is the last layer's
output) and `speculators_config.verifier.name_or_path` (the target it was trained for). Its safetensors hold
`fc.weight`, `layers.0.{hidden_norm, input_layernorm, post_attention_layernorm}.weight`,
`layers.0.self_attn.{q,k,v,o}_proj.weight`, `layers.0.mlp.{gate,up,down}_proj.weight`, `norm.weight`,
`lm_head.weight` (draft vocabulary rows), `d2t` (draft id i is target id i + d2t[i]) and `t2d` (a mask over the
target's vocabulary: the ids the drafter can draft), and `embed_tokens.weight` unless it shares the target's.
The original EAGLE-3 layout (SafeAILab/SGLang: `LlamaForCausalLMEagle3`) has the layer's settings at the top
level and calls layer 0 `midlayer`; it loads the same way. The network is `eagle3_model.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from ..arrays import int_list, load_arrays
from ..errors import IncompatiblePairError, NotAModelError, UnsupportedModelError
from ..models.folder_kind import drafter_kind, folder_name, read_json
from ..models.loading import LoadedModel
from .eagle3_model import DraftVocabulary, Eagle3Config, Eagle3Model, Eagle3Runner, Tap
from .mtp import text_model
from .pairing import another_width
from .weights import load_strictly

LAYER_TYPES = {"llama": False, "qwen3": True}  # transformer_layer_config.model_type -> q/k norms


def _layer_config(config: dict[str, Any]) -> dict[str, Any]:
    return config.get("transformer_layer_config") or config


def parse_config(config: dict[str, Any], path: Path) -> Eagle3Config:
    """The drafter's shape from its config.json, or one line saying what it lacks."""
    layer = _layer_config(config)
    layer_type = str(layer.get("model_type") or "llama")
    # Absent keys take speculators' defaults (what its trainer assumed), not vLLM's: vLLM reads a missing
    # norm_before_residual as true, speculators and mlx-vlm as false; speculators always writes it.
    try:
        hidden, heads = int(layer["hidden_size"]), int(layer["num_attention_heads"])
        vocab = int(layer["vocab_size"])
        rope = layer.get("rope_parameters") or layer.get("rope_scaling")
        built = Eagle3Config(
            hidden_size=hidden, intermediate_size=int(layer["intermediate_size"]),
            num_hidden_layers=int(layer.get("num_hidden_layers") or 1), num_attention_heads=heads,
            num_key_value_heads=int(layer.get("num_key_value_heads") or heads),
            head_dim=int(layer.get("head_dim") or hidden // heads), rms_norm_eps=float(layer.get("rms_norm_eps", 1e-6)),
            vocab_size=vocab, draft_vocab_size=int(config.get("draft_vocab_size") or vocab),
            target_hidden_size=int(config.get("target_hidden_size") or hidden),
            tap_count=len(config.get("eagle_aux_hidden_state_layer_ids") or (0, 0, 0)),
            rope_theta=float(layer.get("rope_theta") or (rope or {}).get("rope_theta") or 10000.0),
            rope_scaling=rope if rope and (rope.get("rope_type") or rope.get("type")) not in (None, "default") else None,
            max_position_embeddings=int(layer.get("max_position_embeddings") or 4096),
            attention_bias=bool(layer.get("attention_bias", False)), mlp_bias=bool(layer.get("mlp_bias", False)),
            qk_norm=LAYER_TYPES.get(layer_type, False), norm_before_residual=bool(config.get("norm_before_residual", False)),
            norm_before_fc=bool(config.get("norm_before_fc", False)),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise NotAModelError(f"{folder_name(path)}'s EAGLE-3 config is incomplete ({e!r} missing or wrong). "
                             "Download it again.") from e
    _check_supported(layer, layer_type, path)
    return built


def _check_supported(layer: dict[str, Any], layer_type: str, path: Path) -> None:
    if layer_type not in LAYER_TYPES or str(layer.get("hidden_act", "silu")) != "silu":
        raise UnsupportedModelError(
            f"{folder_name(path)} is an EAGLE-3 drafter built on a {layer_type!r} layer with "
            f"{layer.get('hidden_act', 'silu')!r} activations; SpecChat runs Llama and Qwen3 ones (silu). "
            "Pick another drafter, or draft with a draft model or prompt lookup."
        )


def target_layer_count(target: LoadedModel) -> int:
    return len(getattr(text_model(target.model), "layers", None) or [])


def drafter_taps(config: dict[str, Any], layers: int) -> tuple[Tap, ...]:
    """The target states the drafter reads, as (layer, "input" | "output"): the input of each listed layer (vLLM
    captures the residual stream entering it; n, the layer count, is the last layer's output)."""
    ids = config.get("eagle_aux_hidden_state_layer_ids") or [2, layers // 2, layers - 3]
    return tuple((layers - 1, "output") if int(i) == layers else (int(i), "input") for i in ids)


def verifier_name(config: dict[str, Any]) -> str | None:
    """The target the drafter was trained for, as its config names it."""
    verifier = (config.get("speculators_config") or {}).get("verifier") or {}
    name = verifier.get("name_or_path") if isinstance(verifier, dict) else None
    return str(name) if name else None


def check_target(path: Path, config: dict[str, Any], draft: Eagle3Config, target_config: dict[str, Any],
                 target_name: str, layers: int) -> None:
    """Raise IncompatiblePairError with one line unless the drafter at `path` fits the target (its config, name and
    layer count: judged before any weights load, so that the picker can say it too)."""
    text = target_config.get("text_config") or target_config
    ids = config.get("eagle_aux_hidden_state_layer_ids") or []
    problem = None
    if int(text.get("hidden_size", draft.target_hidden_size)) != draft.target_hidden_size:
        problem = another_width(draft.target_hidden_size, text.get("hidden_size"))
    elif int(text.get("vocab_size", draft.vocab_size)) != draft.vocab_size:
        problem = f"its vocabulary has {text.get('vocab_size')} tokens where the drafter's has {draft.vocab_size}"
    elif any(not 0 <= int(i) <= layers for i in ids) or (not ids and layers < 3):
        problem = f"it has {layers} layers where the drafter taps layers {ids or 'from 2 on'}"
    else:
        problem = _name_problem(verifier_name(config), target_name)
    if problem is not None:
        named = verifier_name(config)
        pick = f"Pick {named} (or a conversion of it) as the target" if named else "Pick the target it was trained for"
        raise IncompatiblePairError(
            f"{folder_name(path)} is an EAGLE-3 drafter{f' for {named}' if named else ''} and cannot draft for "
            f"{target_name.rstrip('/').split('/')[-1]}: {problem}. {pick}, or another drafter."
        )


def _name_problem(named: str | None, target_name: str) -> str | None:
    """A named target whose name the target's own does not contain (owner, case and a quantisation suffix aside)."""
    if not named:
        return None
    base = named.rstrip("/").split("/")[-1].lower()
    return None if base in target_name.rstrip("/").split("/")[-1].lower() else f"it was trained against {named}"


def read_weights(path: Path) -> dict[str, mx.array]:
    """Every tensor of the folder's safetensors, renamed to the network's names (`midlayer.` is layer 0)."""
    files = sorted(path.glob("*.safetensors"))
    raw = load_arrays(*files)
    # verifier_*: frozen training copies of the target's norm and LM head; rotary_emb: RoPE tables.
    return {k.replace("midlayer.", "layers.0."): v for k, v in raw.items()
            if not k.startswith("verifier_") and "rotary_emb." not in k}


def draft_vocabulary(weights: dict[str, mx.array], draft: Eagle3Config, path: Path) -> DraftVocabulary:
    """The map from draft ids to target ids (`d2t`), checked against `t2d` and the config; popped from `weights`."""
    d2t, t2d = weights.pop("d2t", None), weights.pop("t2d", None)
    if d2t is None:
        if draft.draft_vocab_size != draft.vocab_size:
            raise NotAModelError(f"{folder_name(path)} has a reduced vocabulary ({draft.draft_vocab_size} ids) but no "
                                 "d2t map to the target's. Download it again.")
        return DraftVocabulary(mx.arange(draft.vocab_size), draft.vocab_size)
    target_ids = mx.arange(d2t.shape[0]) + d2t.astype(mx.int64)
    problem = _vocabulary_problem(target_ids, t2d, draft)
    if problem:
        raise NotAModelError(f"{folder_name(path)}'s vocabulary map does not fit its config ({problem}). Download it again.")
    return DraftVocabulary(target_ids, draft.vocab_size)


def _vocabulary_problem(target_ids: mx.array, t2d: mx.array | None, draft: Eagle3Config) -> str | None:
    if target_ids.shape[0] != draft.draft_vocab_size:
        return f"d2t has {target_ids.shape[0]} entries for {draft.draft_vocab_size} draft ids"
    ids = int_list(target_ids)
    if min(ids) < 0 or max(ids) >= draft.vocab_size or len(set(ids)) != len(ids):
        return f"d2t maps draft ids outside the target's {draft.vocab_size} ids, or two onto one"
    if t2d is not None:
        mask = t2d.astype(mx.bool_)
        if mask.shape[0] != draft.vocab_size or int(mask.sum()) != len(ids) or not bool(mx.all(mask[target_ids])):
            return "t2d does not mark the ids d2t maps to"
    return None


def check_folder(folder: Path, target_config: dict[str, Any], target_layers: int, target_name: str) -> None:
    """Raise one line unless the EAGLE-3 drafter in `folder` fits the target of `target_config` (`target_layers`
    layers, named `target_name`): its config alone, no weights read (the picker's "Not offered")."""
    config = read_json(folder / "config.json") or {}
    check_target(folder, config, parse_config(config, folder), target_config, target_name, target_layers)


def load_eagle3(path: Path, target: LoadedModel) -> Eagle3Runner:
    """The EAGLE-3 drafter at `path` bound to `target`, or one line saying why it cannot draft for it."""
    path = Path(path)
    config = read_json(path / "config.json") or {}
    if drafter_kind(config) != "eagle3":
        raise NotAModelError(f"{folder_name(path)} is not an EAGLE-3 drafter (its config.json says otherwise).")
    draft = parse_config(config, path)
    layers = target_layer_count(target)
    check_target(path, config, draft, target.config, target.name, layers)
    weights = read_weights(path)
    vocabulary = draft_vocabulary(weights, draft, path)
    model = Eagle3Model(draft, own_embeddings="embed_tokens.weight" in weights)
    load_strictly(model, weights, path, "EAGLE-3 weights do not fit its config")
    runner = Eagle3Runner(model, target.model, vocabulary, drafter_taps(config, layers))
    _check_shared_width(runner, draft, path)
    return runner


def _check_shared_width(runner: Eagle3Runner, draft: Eagle3Config, path: Path) -> None:
    """A drafter without its own embeddings reads the target's, which must be as wide as its layer."""
    table = runner.embed_table
    width = table.weight.shape[-1] * (32 // table.bits if isinstance(table, nn.QuantizedEmbedding) else 1)
    if width != draft.hidden_size:
        raise IncompatiblePairError(
            f"{folder_name(path)} is an EAGLE-3 drafter {draft.hidden_size} wide without its own embeddings, and the "
            f"target's are {width} wide. Pick the target it was trained for."
        )
