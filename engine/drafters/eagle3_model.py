"""EAGLE-3's drafter network in MLX, and the runner that binds it to a target for the round.

An EAGLE-3 drafter (Li et al. 2025; vLLM's `speculators` format, `engine/drafters/eagle3.py`) is one decoder
layer that reads the target's hidden states at three tapped layers, each layer's *input* (vLLM captures the
residual stream entering layer i):

    g_t  = fc(concat[taps at t])                          (3 x target hidden -> hidden; RMSNorm first if norm_before_fc)
    x    = layer_0(input_layernorm(embed(token t+1)), hidden_norm(g_t))   attention over [e, h], 2 x hidden wide;
                                                           its residual is g_t (hidden_norm(g_t): norm_before_residual)
    x    = layers_1..(x)                                   (plain Llama layers, if the drafter has more than one)
    out  = x;  logits = lm_head(norm(out))                 (a reduced vocabulary: draft id i is target id i + d2t[i])

Entry t of the drafter's KV cache pairs the taps at t with the token at t + 1, exactly as the MTP head's entries
do, so the round reuses the MTP head's bookkeeping (`engine/decoding/drafting/mtp.py`). Later draft tokens chain:
the drafter's own pre-norm output `out` stands in for g (it is not projected by fc), as speculators trains it
("training-time test") and vLLM and mlx-vlm run it.

The arithmetic follows mlx-vlm 0.7.10's `Eagle3DraftModel` (checked against it on the same weights in
`tests/engine/drafters/test_eagle3_parity.py`); we write it here because mlx-vlm has no Qwen3-style first layer
(q/k norms, as speculators trains for Qwen3 targets) and ignores a Llama 3.1 target's `rope_scaling`, and because
the round needs the drafter's logits mapped into the target's vocabulary (q is zero outside the draft vocabulary).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.base import create_attention_mask, scaled_dot_product_attention
from mlx_lm.models.rope_utils import initialize_rope

from .mtp import MTPRunner

Tap = tuple[int, Literal["input", "output"]]  # a target state the drafter reads: (layer, which side of it)


@dataclass(frozen=True)
class Eagle3Config:
    """The drafter's shape and EAGLE-3 settings, as its config.json gives them (see `eagle3.parse_config`)."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    vocab_size: int  # the target's vocabulary (embedding rows)
    draft_vocab_size: int
    target_hidden_size: int
    tap_count: int = 3
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = None
    max_position_embeddings: int = 4096
    attention_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False  # a Qwen3-style layer (speculators' `transformer_layer_config.model_type` "qwen3")
    norm_before_residual: bool = False
    norm_before_fc: bool = False


class Attention(nn.Module):
    """Llama (or Qwen3, with q/k norms) attention whose projections read `input_size` features."""

    def __init__(self, config: Eagle3Config, input_size: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, head_dim = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        self.scale = head_dim**-0.5
        bias = config.attention_bias
        self.q_proj = nn.Linear(input_size, self.heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(input_size, self.kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(input_size, self.kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(self.heads * head_dim, config.hidden_size, bias=bias)
        if config.qk_norm:
            self.q_norm = nn.RMSNorm(head_dim, eps=config.rms_norm_eps)
            self.k_norm = nn.RMSNorm(head_dim, eps=config.rms_norm_eps)
        self.rope = initialize_rope(head_dim, config.rope_theta, False, config.rope_scaling,
                                    config.max_position_embeddings)

    def __call__(self, x: mx.array, mask: Any, cache: Any) -> mx.array:
        b, length, _ = x.shape
        queries = self.q_proj(x).reshape(b, length, self.heads, -1)
        keys = self.k_proj(x).reshape(b, length, self.kv_heads, -1)
        values = self.v_proj(x).reshape(b, length, self.kv_heads, -1).transpose(0, 2, 1, 3)
        if "q_norm" in self:
            queries, keys = self.q_norm(queries), self.k_norm(keys)
        queries, keys = queries.transpose(0, 2, 1, 3), keys.transpose(0, 2, 1, 3)
        queries, keys = self.rope(queries, offset=cache.offset), self.rope(keys, offset=cache.offset)
        keys, values = cache.update_and_fetch(keys, values)
        out = scaled_dot_product_attention(queries, keys, values, cache=cache, scale=self.scale, mask=mask)
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(b, length, -1))


class MLP(nn.Module):
    def __init__(self, config: Eagle3Config) -> None:
        super().__init__()
        size, inner, bias = config.hidden_size, config.intermediate_size, config.mlp_bias
        self.gate_proj = nn.Linear(size, inner, bias=bias)
        self.up_proj = nn.Linear(size, inner, bias=bias)
        self.down_proj = nn.Linear(inner, size, bias=bias)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class FirstLayer(nn.Module):
    """EAGLE-3's layer 0: attention over [norm(embedding), norm(hidden)], the residual stream carrying the hidden."""

    def __init__(self, config: Eagle3Config) -> None:
        super().__init__()
        self.norm_before_residual = config.norm_before_residual
        self.input_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.hidden_norm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.self_attn = Attention(config, 2 * config.hidden_size)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.mlp = MLP(config)

    def __call__(self, embeds: mx.array, hidden: mx.array, mask: Any, cache: Any) -> mx.array:
        normed = self.hidden_norm(hidden)
        residual = normed if self.norm_before_residual else hidden
        x = residual + self.self_attn(mx.concatenate([self.input_layernorm(embeds), normed], axis=-1), mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class DecoderLayer(nn.Module):
    """A plain pre-norm Llama layer (drafters trained with more than one layer)."""

    def __init__(self, config: Eagle3Config) -> None:
        super().__init__()
        self.input_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.self_attn = Attention(config, config.hidden_size)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.mlp = MLP(config)

    def __call__(self, x: mx.array, mask: Any, cache: Any) -> mx.array:
        x = x + self.self_attn(self.input_layernorm(x), mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class Eagle3Model(nn.Module):
    """The drafter's weights under their published names (`embed_tokens` only when the checkpoint has its own).

    Args:
        config: the drafter's shape.
        own_embeddings: the checkpoint holds `embed_tokens.weight`; without it the target's table is used.
    """

    def __init__(self, config: Eagle3Config, own_embeddings: bool = False) -> None:
        super().__init__()
        self.config = config
        if own_embeddings:
            self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        fc_width = config.tap_count * config.target_hidden_size
        if config.norm_before_fc:
            self.input_norm = nn.RMSNorm(fc_width, eps=config.rms_norm_eps)
        self.fc = nn.Linear(fc_width, config.hidden_size, bias=False)
        self.layers = [FirstLayer(config)] + [DecoderLayer(config) for _ in range(1, config.num_hidden_layers)]
        self.norm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.draft_vocab_size, bias=False)

    def project(self, taps: list[mx.array]) -> mx.array:
        """The tapped states (each (L, target hidden)) of positions, fused into the drafter's width: (L, hidden)."""
        x = mx.concatenate(taps, axis=-1)
        return self.fc(self.input_norm(x) if "input_norm" in self else x)

    def __call__(self, embeds: mx.array, hidden: mx.array, cache: list[Any]) -> mx.array:
        """(B, L, H) embeddings of tokens t+1 and fused states (or own outputs) at t -> pre-norm outputs (B, L, H)."""
        mask = create_attention_mask(hidden, cache[0])
        first, *rest = self.layers  # one list, for the checkpoint's `layers.i` names
        assert isinstance(first, FirstLayer)
        x = first(embeds, hidden, mask, cache[0])
        for layer, layer_cache in zip(rest, cache[1:]):
            assert isinstance(layer, DecoderLayer)
            x = layer(x, mask, layer_cache)
        return x

    def draft_logits(self, outputs: mx.array) -> mx.array:
        """Logits over the draft vocabulary of the tokens the outputs predict."""
        return self.lm_head(self.norm(outputs))


class DraftVocabulary:
    """The draft vocabulary as target ids: draft id i is target id i + d2t[i]; every other target id gets -inf.

    Args:
        target_ids: (draft vocab,) the target id of each draft id.
        target_size: the target's vocabulary size.
    """

    def __init__(self, target_ids: mx.array, target_size: int) -> None:
        draft_size = target_ids.shape[0]
        gather = mx.full((target_size,), draft_size, dtype=mx.int32)  # draft_size: the -inf column added below
        gather[target_ids.astype(mx.int32)] = mx.arange(draft_size, dtype=mx.int32)
        self.target_ids = target_ids.astype(mx.int32)
        self.gather = gather
        self.identity = draft_size == target_size and bool(mx.all(self.target_ids == mx.arange(draft_size)))

    def to_target(self, logits: mx.array) -> mx.array:
        """(L, draft vocab) logits -> (L, target vocab): each at its target id, -inf where the drafter cannot draft."""
        if self.identity:
            return logits
        outside = mx.full((*logits.shape[:-1], 1), -mx.inf, dtype=logits.dtype)
        return mx.take(mx.concatenate([logits, outside], axis=-1), self.gather, axis=-1)


class Eagle3Runner(MTPRunner):
    """The drafter bound to its target for a chat: its KV cache of entries and the passes the round runs.

    The round's bookkeeping is the MTP head's (`MTPState`): `project` turns a target pass's taps into the states
    it stores, `feed` appends entries (a state and the id that follows it) and returns their outputs, `logits`
    turns outputs into the target-width logits the warp and the acceptance rule read.
    """

    head: Eagle3Model

    def __init__(self, model: Eagle3Model, target: nn.Module, vocabulary: DraftVocabulary, taps: tuple[Tap, ...]) -> None:
        super().__init__(model, target)  # the cache and rewinds work alike
        self.vocabulary = vocabulary
        self.taps = taps
        self.embed_table = model.embed_tokens if "embed_tokens" in model else self.shared.embed_tokens

    def project(self, states: list[mx.array]) -> mx.array:
        return self.head.project(states)

    def feed(self, hidden: mx.array, next_ids: mx.array) -> mx.array:
        return self.head(self.embed_table(next_ids)[None], hidden[None], self.cache)[0]

    def logits(self, outputs: mx.array) -> mx.array:
        return self.vocabulary.to_target(self.head.draft_logits(outputs))
