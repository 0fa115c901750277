"""DFlash drafters (z-lab): loading a published folder, and drafting a block from the target's hidden states.

A folder as z-lab publishes it (`z-lab/Qwen3-8B-DFlash-b16`, `z-lab/Qwen3.8-27B-DFlash2`) holds `config.json`
(`architectures` `DFlashDraftModel` or `DFlash2DraftModel`, a Qwen3 shape, `num_target_layers`, and
`dflash_config` with `target_layer_ids`, `mask_token_id`, `block_size`; DFlash2 adds `conv_kernel_size`,
`conv_group_size`, `selector_rank`, `selector_top_k`) and safetensors named `fc.weight`, `hidden_norm.weight`,
`layers.N...`, `norm.weight` (DFlash2: `layers.N.attention_conv...`, `candidate_selector.predecessor_codebook`
without `.weight`). There is no embedding table and no LM head: the drafter borrows the target's.

The API the round uses (one generation, batch 1; the network is `dflash_model.py`):

    drafter = load_drafter_for(path, target_model, target_config, target_name)   # or DFlashRunner(model, target)
    logits, states = forward_with_taps(target_model, ids, cache, taps)   # the target's pass and its tapped
    drafter.feed(mx.concatenate(states, axis=-1))    # layers' outputs: (1, L, n_taps * hidden)
    block = drafter.draft(last_token)                # -> BlockDraft: ids (B-1,), logits (B-1, V), probs or None
    ... the target verifies [last_token, *block.ids[:k]] the same way and accepts a of them ...
    drafter.feed(verify_taps[:, : a + 1])            # the accepted positions only, last_token's included
    drafter.draft(correction_or_bonus)               # and so on; drafter.length is the context positions held
    drafter.rewind(n)                                # a turn edited or regenerated: keep the first n positions

`feed` queues hidden states and the next `draft` writes them into the drafter's cache in the same pass as the
block, as z-lab does; the cache holds only context, never the block, so a round's rejections need no rewind.
`draft(..., choose=None)` is greedy; with `choose` (the engine's `Warper.choose`: (logits, position) -> (ids,
log q)) it samples and returns q: for DFlash all 15 positions at once, for DFlash2 one step at a time along the
selector's path (q of step i depends on the token drawn at i - 1, which is still an exact proposal); `choose`
gets the drafter's raw logits, so a penalty or width fit is the chooser's to apply; `position` says which context
index the first drafted token has (coupled sampling's noise). `absorb()` writes queued context into the cache
without drafting (a prompt's prefill chunks). In the round, the target side is the target's own passes
(`engine/decoding/drafting/dflash.py` hears their states through `engine/decoding/hidden_states.py`, the one
tap mechanism, which the parity tests and the cost benchmark use too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from ..arrays import load_arrays
from ..errors import NotAModelError
from ..models.folder_kind import architectures, drafter_kind, folder_name, read_json
from .dflash_model import Chooser, DFlashConfig, DFlashModel
from .dflash_pairing import check_target
from .weights import load_strictly

# Published torch checkpoints store DFlash2's codebooks as bare tensors; MLX's Embedding names them `.weight`.
CODEBOOKS = ("candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook")
DFLASH_ARCHITECTURES = {"DFlashDraftModel": 1, "DFlash2DraftModel": 2}


@dataclass
class BlockDraft:
    """One block's proposal for the positions after the last token.

    Attributes:
        ids: (B-1,) the drafted ids, lazy.
        logits: (B-1, V) the drafter's logits through the target's LM head (DFlash2: before its selector).
        probs: (B-1, V) the distributions the ids were drawn from; None when greedy.
    """

    ids: mx.array
    logits: mx.array
    probs: mx.array | None


# --- the published format -----------------------------------------------------------------------------------


def dflash_version(config: dict[str, Any] | None) -> int | None:
    """1 for a DFlash drafter's config, 2 for DFlash2, None for anything else: another kind (DSpark's share
    `dflash_config`), or a DFlash version SpecChat cannot run (`DFlash3DraftModel`)."""
    if drafter_kind(config) != "dflash":
        return None
    names = architectures(config or {})
    known = [DFLASH_ARCHITECTURES[n] for n in names if n in DFLASH_ARCHITECTURES]
    if known:
        return known[0]
    return None if any("dflash" in n.lower() for n in names) else 1  # no DFlash class named: its dflash_config says


def read_dflash_config(path: Path) -> DFlashConfig:
    """The drafter's config from its folder, or one line saying what is missing."""
    config = read_json(path / "config.json")
    version = dflash_version(config) if config is not None else None
    if config is None or version is None:
        named = ", ".join(architectures(config or {})) or "no architecture"
        raise NotAModelError(
            f"{folder_name(path)} is not a DFlash drafter SpecChat runs: its config.json names {named}, not "
            "DFlashDraftModel or DFlash2DraftModel. Pick a folder downloaded from a DFlash repo such as "
            "z-lab/Qwen3-8B-DFlash-b16."
        )
    return parsed_or_refused(path, "DFlash", lambda: parse_config(config, version))


def check_folder(folder: Path, target_config: dict[str, Any], target_layers: int, target_name: str) -> None:
    """Raise one line unless the DFlash drafter in `folder` fits the target of `target_config` (`target_layers`
    layers, named `target_name`): its config alone, no weights read (the picker's "Not offered")."""
    check_target(folder, read_dflash_config(folder), target_config, target_layers, target_name)


def parsed_or_refused(path: Path, family: str, parse: Callable[[], Any]) -> Any:
    """What `parse()` reads from a drafter's config, or one line saying the config is incomplete (a KeyError
    names the missing key): a broken download, not a traceback."""
    try:
        return parse()
    except KeyError as e:
        problem = f"it has no {e.args[0]}"
    except (TypeError, ValueError) as e:
        problem = f"{type(e).__name__}: {e}"
    raise NotAModelError(f"{folder_name(path)}'s config.json is not a complete {family} config ({problem}). Download it again.")


def parse_config(config: dict[str, Any], version: int) -> DFlashConfig:
    """The DFlashConfig of a config.json's contents (KeyError naming a missing key), read as z-lab's loader reads it."""
    dflash = config.get("dflash_config") or {}

    def setting(key: str, default: Any = KeyError) -> Any:
        """A DFlash setting: in dflash_config, or at the top level as some exports put it."""
        value = dflash.get(key, config.get(key, default))
        if value is KeyError:
            raise KeyError(key)
        return value

    rope = config.get("rope_parameters") or config.get("rope_scaling")
    heads = int(config["num_attention_heads"])
    return DFlashConfig(
        hidden_size=int(config["hidden_size"]),
        num_hidden_layers=int(config["num_hidden_layers"]),
        num_attention_heads=heads,
        num_key_value_heads=int(config.get("num_key_value_heads", heads)),
        head_dim=int(config.get("head_dim") or config["hidden_size"] // heads),
        intermediate_size=int(config["intermediate_size"]),
        vocab_size=int(config["vocab_size"]),
        rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)),
        rope_theta=float(config.get("rope_theta", (rope or {}).get("rope_theta", 10000.0))),
        max_position_embeddings=int(config.get("max_position_embeddings", 40960)),
        block_size=int(setting("block_size", 16)),
        target_layer_ids=tuple(int(i) for i in setting("target_layer_ids")),
        num_target_layers=int(setting("num_target_layers")),
        mask_token_id=int(setting("mask_token_id")),
        rope_scaling=rope,
        layer_types=tuple(config.get("layer_types") or ()),
        sliding_window=config.get("sliding_window"),
        final_logit_softcapping=setting("final_logit_softcapping", None),
        input_embedding_scale=float(dflash.get("input_embedding_scale", 1.0)),
        output_multiplier=float(dflash.get("output_multiplier", 1.0)),
        is_causal=dflash.get("causal", config.get("is_causal")),
        version=version,
        **{key: int(dflash.get(key, 0)) for key in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")},
    )


def published_weights(weights: dict[str, mx.array]) -> dict[str, mx.array]:
    """Weight names as published mapped to the module's: no `model.` prefix, codebooks as Embedding weights,
    no rotary buffers."""
    named = {}
    for name, value in weights.items():
        name = name.removeprefix("model.")
        if name.startswith("rotary_emb."):
            continue
        named[f"{name}.weight" if name in CODEBOOKS else name] = value
    return named


def load_dflash(path: Path) -> DFlashModel:
    """The drafter network of a published folder, in float32 on the CPU."""
    path = Path(path)
    model = DFlashModel(read_dflash_config(path))
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise NotAModelError(f"{folder_name(path)} holds no .safetensors weights. Download the DFlash drafter again.")
    weights = published_weights(load_arrays(*files))
    load_strictly(model, weights, path, "weights do not fit its DFlash config")
    return model


def load_drafter_for(path: Path, target: nn.Module, target_config: dict[str, Any], target_name: str) -> DFlashRunner:
    """A DFlash folder loaded as the drafter of `target`, or one line saying why they do not pair."""
    config = read_dflash_config(Path(path))
    check_target(Path(path), config, target_config, len(target_layers(target)), target_name)
    return DFlashRunner(load_dflash(Path(path)), target)


# --- the target side: its embedding table, its LM head, its layers ------------------------------------------


def target_layers(target: nn.Module) -> list[nn.Module]:
    """The target's decoder layers (dense and hybrid mlx-lm models alike; qwen3_5 wraps a language model)."""
    for owner in (getattr(target, "model", None), getattr(target, "language_model", None), target):
        if owner is not None and isinstance(getattr(owner, "layers", None), list):
            return owner.layers
    raise NotAModelError(f"{type(target).__name__} has no list of layers a DFlash drafter can tap.")


class TargetHead:
    """The target's embedding table (with any scale it applies) and LM head, which the drafter borrows."""

    def __init__(self, target: nn.Module, config: DFlashConfig) -> None:
        inner = next(
            (m for m in (target, getattr(target, "model", None), getattr(getattr(target, "language_model", None), "model", None))
             if m is not None and hasattr(m, "embed_tokens")),
            None,
        )
        if inner is None:
            raise NotAModelError(f"{type(target).__name__} has no embedding table a DFlash drafter can share.")
        self.embed_tokens = inner.embed_tokens
        scale = getattr(self.embed_tokens, "embed_scale", getattr(inner, "embed_scale", 1.0))
        self.embed_scale = scale * config.input_embedding_scale
        language = getattr(target, "language_model", target)
        head = getattr(target, "lm_head", None)
        head = getattr(language, "lm_head", None) if head is None else head
        self.lm_head = self.embed_tokens.as_linear if head is None else head  # tied embeddings: the table
        self.config = config

    def embed(self, ids: mx.array) -> mx.array:
        return self.embed_tokens(ids) * self.embed_scale

    def logits(self, hidden: mx.array) -> mx.array:
        logits = self.lm_head(hidden) * self.config.output_multiplier
        cap = self.config.final_logit_softcapping
        return mx.tanh(logits / cap) * cap if cap else logits


# --- the runner -----------------------------------------------------------------------------------------------


class DFlashRunner:
    """A DFlash drafter bound to its target for one generation: its cache of context, and the block pass.

    Attributes:
        model: the drafter network.
        head: the target's embedding table and LM head.
        cache: one cache per drafter layer, holding the keys and values of the context fed so far.
    """

    def __init__(self, model: DFlashModel, target: nn.Module) -> None:
        self.model = model
        self.config = model.config
        self.head = TargetHead(target, model.config)
        self.cache = model.make_cache()
        self._pending: list[mx.array] = []

    @property
    def max_draft(self) -> int:
        """The most tokens one block drafts: every slot after the last token's (DSpark's slot 0 drafts too)."""
        return self.config.block_size - 1

    @property
    def length(self) -> int:
        """Context positions fed so far (in the cache or queued for the next pass)."""
        return self._cached + sum(h.shape[1] for h in self._pending)

    @property
    def _cached(self) -> int:
        return int(self.cache[0].offset)

    def feed(self, hidden: mx.array) -> None:
        """Queue the tapped target states (1, S, n_taps * H) of the next S context positions."""
        self._pending.append(hidden if hidden.ndim == 3 else hidden[None])

    def draft(self, last_token: int, hidden: mx.array | None = None, block_size: int | None = None,
              choose: Chooser | None = None, position: int | None = None) -> BlockDraft:
        """Draft the block after `last_token` (the token at context position `length`, not yet fed), feeding
        `hidden` first if given. Greedy without `choose`; otherwise sampled with it, q returned. `position`: the
        context index of the first drafted token, for `choose` (default length + 1: the drafter holds the
        context from its start)."""
        if hidden is not None:
            self.feed(hidden)
        size = block_size or self.config.block_size
        position = self.length + 1 if position is None else position
        block = mx.array([[last_token] + [self.config.mask_token_id] * (size - 1)])
        hidden_out = self.model(self.head.embed(block), self._take_pending(), self.cache)
        logits = self.head.logits(hidden_out)
        if self.config.version == 2:
            ids, logq = self.model.candidate_selector.select(hidden_out, logits, last_token, choose, position)
        elif choose is None:
            ids, logq = mx.argmax(logits[0], axis=-1).astype(mx.uint32), None
        else:
            ids, logq = choose(logits[0], position)
        return BlockDraft(ids, logits[0], None if logq is None else mx.exp(logq))

    def absorb(self) -> None:
        """Write the queued context into the cache now, without drafting (so that queued states stay few)."""
        if self._pending:
            self.model.absorb(self._take_pending(), self.cache)

    def _take_pending(self) -> mx.array:
        width = len(self.config.target_layer_ids) * self.config.hidden_size
        pending, self._pending = self._pending, []
        if not pending:
            return mx.zeros((1, 0, width))
        return pending[0] if len(pending) == 1 else mx.concatenate(pending, axis=1)

    def rewind(self, length: int) -> None:
        """Keep only the first `length` context positions (a turn edited or regenerated).

        Sliding-window layers keep window - 1 positions: after a rewind they see fewer until the context
        grows again, as z-lab's rollback leaves them (drafts only; the round's output stays exact).
        """
        if length >= self._cached:
            self._pending = [mx.concatenate(self._pending, axis=1)[:, : length - self._cached]] if self._pending else []
            return
        self._pending = []
        drop = self._cached - length
        for cache in self.cache:
            _trim(cache, drop)

    def reset(self) -> None:
        """Forget the context (a new conversation)."""
        self.cache = self.model.make_cache()
        self._pending = []


def _trim(cache: Any, n: int) -> None:
    """Drop the newest n positions of a layer's cache (a rotating one: those of them it still holds)."""
    from mlx_lm.models.cache import RotatingKVCache

    if isinstance(cache, RotatingKVCache) and cache.keys is not None:
        held = min(n, cache.keys.shape[2])
        keys, values = cache._temporal_order(cache.keys), cache._temporal_order(cache.values)
        cache.keys, cache.values = keys[..., : keys.shape[2] - held, :], values[..., : values.shape[2] - held, :]
        cache.offset -= n
        cache._idx = cache.keys.shape[2]
    else:
        cache.trim(n)
