"""DFlash's drafter network in MLX: z-lab's block-diffusion drafter and its DFlash2 variant.

A DFlash drafter is a few Qwen3-style layers that never see text directly. The target's hidden states at a few
tapped layers (each layer's *output*), concatenated, go through `fc` and `hidden_norm` and become the keys and
values of a context every drafter layer attends to; the queries are a block [last token, mask x 15] embedded
with the *target's* embedding table. One pass over the block gives 15 draft positions, which the *target's* LM
head turns into logits. Only the context's keys and values are cached, so the block itself leaves no trace and
the cache always holds exactly the context fed so far.

DFlash2 (`DFlash2DraftModel`) adds two things, both small: a two-tap dynamic causal convolution over the block
around every attention and MLP sublayer, and a candidate selector that keeps the top `selector_top_k` tokens of
each position and walks one path through them with a low-rank score between neighbours, so that position i's
distribution depends on the token chosen at i - 1.

The arithmetic follows z-lab's own MLX backend (`dflash/model_mlx.py` in PyPI's `dflash`) step by step, and
`tests/engine/drafters/test_dflash.py` checks it against that package on the same weights. We write it here
rather than import it: that package pins old versions of everything, and mlx-vlm's copy (0.7.10) has no
distribution for DFlash2's sampled path, which exact rejection sampling needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.base import create_causal_mask
from mlx_lm.models.cache import KVCache, RotatingKVCache
from mlx_lm.models.qwen3 import MLP
from mlx_lm.models.rope_utils import initialize_rope

# (logits (L, V), position of the first row) -> (ids (L,), warped log-probabilities (L, V)): the engine's
# `Warper.choose`. None anywhere a chooser is taken means greedy.
Chooser = Callable[[mx.array, int], tuple[mx.array, mx.array | None]]


@dataclass
class DFlashConfig:
    """The drafter's shape and its DFlash settings, as `config.json` and its `dflash_config` give them."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    block_size: int
    target_layer_ids: tuple[int, ...]
    num_target_layers: int
    mask_token_id: int
    rope_scaling: dict[str, Any] | None = None
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    final_logit_softcapping: float | None = None
    input_embedding_scale: float = 1.0
    output_multiplier: float = 1.0
    is_causal: bool | None = None
    version: int = 1
    conv_kernel_size: int = 0
    conv_group_size: int = 0
    selector_rank: int = 0
    selector_top_k: int = 0

    def __post_init__(self) -> None:
        if not self.layer_types:
            self.layer_types = ("full_attention",) * self.num_hidden_layers


class DFlashAttention(nn.Module):
    """Queries from the block; keys and values from the cached context followed by the block's own."""

    def __init__(self, config: DFlashConfig, sliding: bool) -> None:
        super().__init__()
        dim, head = config.hidden_size, config.head_dim
        self.n_heads, self.n_kv_heads, self.head_dim = config.num_attention_heads, config.num_key_value_heads, head
        self.scale = head**-0.5
        self.window = config.sliding_window if sliding else None
        # z-lab's rule: unless the config says, sliding layers are causal and full ones see the whole block.
        self.causal = sliding if config.is_causal is None else bool(config.is_causal)
        self.q_proj = nn.Linear(dim, self.n_heads * head, bias=False)
        self.k_proj = nn.Linear(dim, self.n_kv_heads * head, bias=False)
        self.v_proj = nn.Linear(dim, self.n_kv_heads * head, bias=False)
        self.o_proj = nn.Linear(self.n_heads * head, dim, bias=False)
        self.q_norm = nn.RMSNorm(head, eps=config.rms_norm_eps)
        self.k_norm = nn.RMSNorm(head, eps=config.rms_norm_eps)

    def __call__(self, x: mx.array, context: mx.array, rope: nn.Module, cache: Any) -> mx.array:
        B, L, _ = x.shape
        keys, values = self.remember(context, rope, cache)
        held = keys.shape[2]
        queries = self.q_norm(self.q_proj(x).reshape(B, L, self.n_heads, -1)).transpose(0, 2, 1, 3)
        block_keys, block_values = self._keys_values(x)
        queries = rope(queries, offset=cache.offset)
        block_keys = rope(block_keys, offset=cache.offset)
        keys = mx.concatenate([keys, block_keys], axis=2)
        values = mx.concatenate([values, block_values], axis=2)
        out = mx.fast.scaled_dot_product_attention(queries, keys, values, scale=self.scale, mask=self._mask(L, held))
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(B, L, -1))

    def remember(self, context: mx.array, rope: nn.Module, cache: Any) -> tuple[mx.array, mx.array]:
        """Add the context's keys and values to the cache (they depend on the context alone, never on a block);
        returns the keys and values the cache holds now."""
        context = self._within_window(context, cache)
        keys, values = self._keys_values(context)
        keys = rope(keys, offset=cache.offset)
        if isinstance(cache, RotatingKVCache) and keys.shape[2] == 1 and _rewound_window(cache):
            return cache._update_concat(keys, values)
        return cache.update_and_fetch(keys, values)

    def _within_window(self, context: mx.array, cache: Any) -> mx.array:
        """A sliding layer never needs more than window - 1 context positions: skip the older ones."""
        if self.window is None or context.shape[1] <= self.window - 1:
            return context
        skip = context.shape[1] - (self.window - 1)
        cache.offset += skip
        return context[:, skip:]

    def _keys_values(self, x: mx.array) -> tuple[mx.array, mx.array]:
        B, S, _ = x.shape
        shape = (B, S, self.n_kv_heads, self.head_dim)  # explicit: S is 0 when no new context came
        keys = self.k_norm(self.k_proj(x).reshape(shape)).transpose(0, 2, 1, 3)
        return keys, self.v_proj(x).reshape(shape).transpose(0, 2, 1, 3)

    def _mask(self, L: int, held: int) -> mx.array | None:
        """Which keys each block position sees: the context (within the window) and the block (causally or not)."""
        if self.window is None:
            return create_causal_mask(L, offset=held) if self.causal else None
        query = held + mx.arange(L)[:, None]
        key = mx.arange(held + L)[None]
        context = (key < held) & (query - key < self.window)
        block = key >= held
        if self.causal:
            block = block & (key <= query)
        return context | block


def _rewound_window(cache: RotatingKVCache) -> bool:
    """Whether a window holds fewer positions than it could after a rewind (`dflash._trim`): mlx-lm's one-position
    update assumes a window that short is still filling from position 0, and fails on it; its many-position
    update (which keeps the window in temporal order) does not."""
    return cache.keys is not None and cache.keys.shape[2] < min(cache.offset, cache.max_size)


class DFlashLayer(nn.Module):
    def __init__(self, config: DFlashConfig, index: int) -> None:
        super().__init__()
        self.self_attn = DFlashAttention(config, config.layer_types[index] == "sliding_attention")
        self.mlp = MLP(config.hidden_size, config.intermediate_size)
        self.input_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def __call__(self, x: mx.array, context: mx.array, rope: nn.Module, cache: Any) -> mx.array:
        h = x + self.self_attn(self.input_layernorm(x), context, rope, cache)
        return h + self.mlp(self.post_attention_layernorm(h))


def grouped_causal_convolve(x: mx.array, dynamic: mx.array, base: mx.array, group_size: int) -> mx.array:
    """out[t] = sum_j (base[j] + dynamic[t, j]) * x[t - j] per channel; `dynamic` is per group of channels."""
    B, L, H = x.shape
    groups = H // group_size
    blocks = x.reshape(B, L, groups, group_size)
    dynamic = dynamic.reshape(B, L, base.shape[0], groups, 1)
    out = mx.zeros_like(blocks)
    for shift in range(base.shape[0]):
        past = blocks if shift == 0 else mx.concatenate([mx.zeros_like(blocks[:, :shift]), blocks[:, :-shift]], axis=1)
        kernel = base[shift].reshape(1, 1, groups, group_size).astype(x.dtype)
        out = out + kernel * past + dynamic[:, :, shift] * past
    return out.reshape(x.shape)


class DynamicCausalConv(nn.Module):
    """DFlash2's convolution around a sublayer: `prepare` before it, `finish` after, each with its own taps."""

    def __init__(self, hidden_size: int, kernel_size: int, group_size: int) -> None:
        super().__init__()
        self.kernel_size, self.group_size = kernel_size, group_size
        self.base_kernel = mx.zeros((2, kernel_size, hidden_size))
        self.kernel_projection = nn.Linear(hidden_size, 2 * kernel_size * (hidden_size // group_size), bias=False)

    def prepare(self, x: mx.array) -> tuple[mx.array, mx.array]:
        dynamic = self.kernel_projection(x).reshape(*x.shape[:-1], 2, self.kernel_size, x.shape[-1] // self.group_size)
        return grouped_causal_convolve(x, dynamic[..., 0, :, :], self.base_kernel[0], self.group_size), dynamic[..., 1, :, :]

    def finish(self, x: mx.array, dynamic: mx.array) -> mx.array:
        return grouped_causal_convolve(x, dynamic, self.base_kernel[1], self.group_size)


class DFlash2Layer(DFlashLayer):
    def __init__(self, config: DFlashConfig, index: int) -> None:
        super().__init__(config, index)
        self.attention_conv = DynamicCausalConv(config.hidden_size, config.conv_kernel_size, config.conv_group_size)
        self.mlp_conv = DynamicCausalConv(config.hidden_size, config.conv_kernel_size, config.conv_group_size)

    def __call__(self, x: mx.array, context: mx.array, rope: nn.Module, cache: Any) -> mx.array:
        h, kernel = self.attention_conv.prepare(self.input_layernorm(x))
        x = x + self.attention_conv.finish(self.self_attn(h, context, rope, cache), kernel)
        h, kernel = self.mlp_conv.prepare(self.post_attention_layernorm(x))
        return x + self.mlp_conv.finish(self.mlp(h), kernel)


class CandidateSelector(nn.Module):
    """DFlash2's path through each position's top-k candidates: unary logit + a low-rank neighbour score."""

    def __init__(self, config: DFlashConfig) -> None:
        super().__init__()
        self.top_k = config.selector_top_k
        self.predecessor_codebook = nn.Embedding(config.vocab_size, config.selector_rank)
        self.successor_codebook = nn.Embedding(config.vocab_size, config.selector_rank)
        self.hidden_projection = nn.Linear(config.hidden_size, config.selector_rank, bias=False)

    def select(
        self, hidden: mx.array, logits: mx.array, anchor: int, choose: Chooser | None, position: int
    ) -> tuple[mx.array, mx.array | None]:
        """The path's ids (L,) and, when sampling, each step's log q over the whole vocabulary (L, V).

        hidden (1, L, H) and logits (1, L, V) are the block's positions after the anchor; `position` is the
        context index of the first of them (coupled sampling draws each position with its own noise).
        """
        candidates = mx.argpartition(logits, -self.top_k, axis=-1)[..., -self.top_k :]
        unary = mx.take_along_axis(logits, candidates, axis=-1)
        projected = self.hidden_projection(hidden)
        predecessor = mx.array([anchor])
        path, rows = [], []
        for i in range(projected.shape[1]):
            pairs = self.predecessor_codebook(predecessor)[:, None] * projected[:, i, None]
            scores = unary[:, i] + mx.sum(pairs * self.successor_codebook(candidates[:, i]), axis=-1)
            if choose is None:
                predecessor = mx.take_along_axis(candidates[:, i], mx.argmax(scores, axis=-1)[:, None], axis=-1)[:, 0]
            else:
                full = mx.put_along_axis(mx.full(logits[:, i].shape, -mx.inf), candidates[:, i], scores, axis=-1)
                predecessor, logq = choose(full, position + i)
                if logq is not None:  # None: a greedy chooser (one that applies a repetition penalty)
                    rows.append(logq)
            path.append(predecessor)
        return mx.concatenate(path).astype(mx.uint32), (mx.concatenate(rows) if rows else None)


class DFlashModel(nn.Module):
    """The drafter's own weights; the embedding table and LM head it uses are the target's (see dflash.py)."""

    def __init__(self, config: DFlashConfig) -> None:
        super().__init__()
        self.config = config
        layer = DFlash2Layer if config.version == 2 else DFlashLayer
        self.fc = nn.Linear(len(config.target_layer_ids) * config.hidden_size, config.hidden_size, bias=False)
        self.hidden_norm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.layers = [layer(config, i) for i in range(config.num_hidden_layers)]
        self.norm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        if config.version == 2:
            self.candidate_selector = CandidateSelector(config)
        self._rope = initialize_rope(
            config.head_dim, config.rope_theta, False, config.rope_scaling, config.max_position_embeddings
        )

    def make_cache(self) -> list[Any]:
        """One cache per layer: a window of window - 1 context positions for sliding layers, all of them otherwise."""
        window = self.config.sliding_window  # a sliding layer without one attends to everything, as in `Attention`
        return [
            RotatingKVCache(max_size=window - 1, keep=0) if kind == "sliding_attention" and window else KVCache()
            for kind in self.config.layer_types
        ]

    def __call__(self, block: mx.array, context: mx.array, cache: list[Any]) -> mx.array:
        """Normed hidden states (1, L - 1, H) of the block's positions after the first.

        block: (1, L, H) the embedded block; context: (1, S, n*H) the tapped target states of the S context
        positions not yet in `cache` (they are added to it).
        """
        h = block
        context = self.hidden_norm(self.fc(context))
        for layer, layer_cache in zip(self.layers, cache):
            h = layer(h, context, self._rope, layer_cache)
        return self.norm(h[:, 1:])

    def absorb(self, context: mx.array, cache: list[Any]) -> None:
        """Write the tapped target states (1, S, n*H) of S context positions into `cache` without drafting: what a
        block pass would have cached, for positions read while no block is drafted (a prompt's prefill chunks)."""
        context = self.hidden_norm(self.fc(context))
        for layer, layer_cache in zip(self.layers, cache):
            layer.self_attn.remember(context, self._rope, layer_cache)
