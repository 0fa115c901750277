"""DSpark drafters (DeepSeek's DeepSpec): loading a published folder, and drafting a block with its Markov head.

A folder as DeepSeek publishes it (`deepseek-ai/dspark_qwen3_8b_block7`) holds `config.json`: a copy of the
target's Qwen3 config with `architectures: ["Qwen3DSparkModel"]`, `num_hidden_layers` (the drafter's), and at the
top level `target_layer_ids`, `num_target_layers`, `mask_token_id`, `block_size`, `markov_rank`,
`markov_head_type`, `enable_confidence_head`, `confidence_head_with_markov`; its safetensors are named `fc.weight`,
`hidden_norm.weight`, `layers.N...`, `norm.weight`, `markov_head.markov_w1.weight`, `markov_head.markov_w2.weight`,
`confidence_head.proj.weight`/`.bias`, and copies of the target's `embed_tokens.weight` and `lm_head.weight`.
SpecForge's packaging (`DSparkDraftModel`) nests the same settings in a `dflash_config` tagged
`projector_type: dspark`; heads that ship no embedding table or LM head borrow the target's (as mlx-dspark does).
Heads this network does not compute are refused in one line: Gemma-4 and Qwen3.5-style backbones, causal or
sliding blocks, reduced vocabularies, Markov heads other than "vanilla", and the speculators packaging.

The API the round uses is DFlash's (`dflash.py`): `feed` the tapped states of accepted positions, `draft` the
block after the last token, `rewind`. A draft also carries each position's confidence; `confident_length` turns
those into DSpark's own draft length.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from ..arrays import load_arrays
from ..errors import NotAModelError
from ..models.folder_kind import drafter_kind, folder_name, read_json
from .dflash import BlockDraft, DFlashRunner, parse_config, parsed_or_refused, published_weights, target_layers
from .dflash_model import Chooser
from .dflash_pairing import check_target
from .dspark_model import DSparkConfig, DSparkModel, confident_length
from .weights import load_strictly

__all__ = ["DSparkDraft", "DSparkRunner", "confident_length", "load_dspark", "load_dspark_drafter_for",
           "read_dspark_config"]


@dataclass
class DSparkDraft(BlockDraft):
    """A block's proposal (ids, the Markov-biased logits each id was drawn from, q when sampled) and each
    position's confidence (n,), or None when the head has no confidence head."""

    confidence: mx.array | None = None


# --- the published format -----------------------------------------------------------------------------------


def read_dspark_config(path: Path, weight_names: set[str] | None = None) -> DSparkConfig:
    """The drafter's config from its folder (and which of the target's tensors it carries), or one line saying
    what is missing or unsupported."""
    config = read_json(path / "config.json")
    if config is None or drafter_kind(config) != "dspark":
        raise NotAModelError(
            f"{folder_name(path)} is not a DSpark drafter: its config.json names no DSpark architecture. Pick a "
            "folder downloaded from a DSpark repo such as deepseek-ai/dspark_qwen3_8b_block7."
        )
    problem = _unsupported(config)
    if problem:
        raise NotAModelError(f"{folder_name(path)} is a DSpark drafter SpecChat cannot run yet: {problem}. "
                             "Pick another drafter for its target (a draft model or prompt lookup).")
    names = weight_names if weight_names is not None else _weight_names(path)
    return parsed_or_refused(path, "DSpark", lambda: parse_dspark_config(config, names))


def check_folder(folder: Path, target_config: dict[str, Any], target_layers: int, target_name: str) -> None:
    """Raise one line unless the DSpark drafter in `folder` fits the target of `target_config` (`target_layers`
    layers, named `target_name`): its config alone, no weights read (the picker's "Not offered")."""
    backbone = read_dspark_config(folder, weight_names=set()).backbone
    check_target(folder, backbone, target_config, target_layers, target_name, "DSpark")


def _setting(config: dict[str, Any], key: str, default: Any = None) -> Any:
    """A DSpark setting: at the top level (DeepSpec) or in `dflash_config` (SpecForge)."""
    return config.get(key, (config.get("dflash_config") or {}).get(key, default))


def _unsupported(config: dict[str, Any]) -> str | None:
    """What in a DSpark config this network does not compute, in a few words; None when it computes it all."""
    model_type = str(config.get("model_type", ""))
    vocab, draft_vocab = config.get("vocab_size"), config.get("draft_vocab_size")
    checks = (
        ("speculators_config" in config or "speculators_model_type" in config, "the speculators packaging"),
        (model_type != "qwen3", f"a {model_type or 'unnamed'} backbone (only Qwen3 backbones run here)"),
        (_setting(config, "markov_head_type", "vanilla") != "vanilla",
         f"a {_setting(config, 'markov_head_type')} Markov head (only vanilla)"),
        (draft_vocab is not None and draft_vocab != vocab, "a reduced draft vocabulary"),
        (bool(config.get("enable_qwen35_gated_q_proj")), "gated attention"),
        (bool(config.get("dflash_query_causal") or _setting(config, "causal") or config.get("attention_sink_bias")
              or "sliding_attention" in (config.get("layer_types") or [])), "a causal or sliding-window block"),
        (bool(config.get("log_snr_conditioning")), "log-SNR conditioning"),
    )
    return next((what for failed, what in checks if failed), None)


def parse_dspark_config(config: dict[str, Any], weight_names: set[str]) -> DSparkConfig:
    """The DSparkConfig of a config.json's contents, with mlx-dspark's defaults for a missing head setting."""
    hoisted = {**config, **{k: _setting(config, k) for k in ("target_layer_ids", "mask_token_id", "num_target_layers")
                            if _setting(config, k) is not None}}
    rank = int(_setting(config, "markov_rank", 256))
    return DSparkConfig(
        backbone=parse_config(hoisted, 1),
        markov_rank=rank,
        confidence=bool(_setting(config, "enable_confidence_head", True)),
        confidence_with_markov=bool(_setting(config, "confidence_head_with_markov", True)) and rank > 0,
        logits_start=_logits_start(config),
        own_embeddings="embed_tokens.weight" in weight_names,
        own_head="lm_head.weight" in weight_names,
    )


def _logits_start(config: dict[str, Any]) -> int:
    """The first drafting slot: `logits_start`, else 1 when `sample_from_anchor` is false, else 0 (DeepSpec)."""
    if "logits_start" in config:
        return int(config["logits_start"])
    anchor = _setting(config, "sample_from_anchor")
    return 1 if anchor is False else 0


def _weight_names(path: Path) -> set[str]:
    return set(_read_weights(path))


def _read_weights(path: Path) -> dict[str, mx.array]:
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise NotAModelError(f"{folder_name(path)} holds no .safetensors weights. Download the DSpark drafter again.")
    return published_weights(load_arrays(*files))


def load_dspark(path: Path) -> DSparkModel:
    """The drafter network of a published folder, in float32 on the CPU."""
    path = Path(path)
    weights = _read_weights(path)
    model = DSparkModel(read_dspark_config(path, set(weights)))
    load_strictly(model, weights, path, "weights do not fit its DSpark config")
    return model


def load_dspark_drafter_for(path: Path, target: nn.Module, target_config: dict[str, Any],
                            target_name: str) -> DSparkRunner:
    """A DSpark folder loaded as the drafter of `target`, or one line saying why they do not pair."""
    model = load_dspark(Path(path))
    check_target(Path(path), model.config, target_config, len(target_layers(target)), target_name, "DSpark")
    return DSparkRunner(model, target)


# --- the drafter ----------------------------------------------------------------------------------------------


class DSparkRunner(DFlashRunner):
    """A DSpark drafter bound to its target for one generation: DFlash's context cache, DSpark's heads.

    Its embedding table and LM head are its own when the folder ships them, the target's otherwise.
    """

    def __init__(self, model: DSparkModel, target: nn.Module) -> None:
        super().__init__(model, target)
        self.dspark = model.dspark
        if self.dspark.own_embeddings:
            self.head.embed_tokens, self.head.embed_scale = model.embed_tokens, 1.0
        if self.dspark.own_head:
            self.head.lm_head = model.lm_head

    @property
    def max_draft(self) -> int:
        return self.dspark.max_draft

    def draft(self, last_token: int, hidden: mx.array | None = None, block_size: int | None = None,
              choose: Chooser | None = None, position: int | None = None) -> DSparkDraft:
        """Draft after `last_token` (at context position `length`, not yet fed), feeding `hidden` first if given:
        one backbone pass over the whole block, then the Markov head one position at a time. As for DFlash, a
        `block_size` asks for block_size - 1 tokens (at most `max_draft`), but the backbone always runs its full
        block: it sees the block bidirectionally and was trained at that width. Greedy without `choose`; sampled
        with it, q returned (None when `choose` returns none: a greedy chooser). `position`: the context index of
        the first drafted token, for `choose` (default length + 1)."""
        position = self.length + 1 if position is None else position
        if hidden is not None:
            self.feed(hidden)
        config = self.config
        block = mx.array([[last_token] + [config.mask_token_id] * (config.block_size - 1)])
        states = self.model(self.head.embed(block), self._take_pending(), self.cache)[0]
        states = states[: min(self.max_draft, block_size - 1) if block_size else self.max_draft]
        base = self.head.logits(states)
        ids, rows, logq = self._markov_steps(base, last_token, choose, position)
        previous = mx.concatenate([mx.array([last_token], dtype=ids.dtype), ids[:-1]])
        confidence = self.model.survival(states, previous)
        drawn_logq = [q for q in logq if q is not None]  # a draw's log q per step, or none when greedy
        probs = mx.exp(mx.concatenate(drawn_logq)) if drawn_logq and len(drawn_logq) == len(logq) else None
        return DSparkDraft(ids, mx.concatenate(rows), probs, confidence)

    def _markov_steps(self, base: mx.array, last_token: int, choose: Chooser | None,
                      position: int) -> tuple[mx.array, list[mx.array], list[mx.array | None]]:
        """Each step's logits (base plus the Markov bias of the token before it) and the id drawn from them."""
        previous = mx.array([last_token], dtype=mx.uint32)
        ids, rows, logq = [], [], []
        for i in range(base.shape[0]):
            logits = self.model.step_logits(base[i : i + 1], previous)
            if choose is None:
                previous = mx.argmax(logits, axis=-1).astype(mx.uint32)
            else:
                drawn, log_q = choose(logits, position + i)
                previous = drawn.astype(mx.uint32)
                logq.append(log_q)
            ids.append(previous)
            rows.append(logits)
        return mx.concatenate(ids), rows, logq
