"""Built-in MTP heads: the extra layer Qwen3.5/3.6, Qwen3-Next and MiMo checkpoints ship to predict one more token.

The head predicts the token at t+2 from the target's hidden state at t and the embedding of the token at t+1:

    x = fc(concat[norm_e(embed(token t+1)), norm_h(hidden t)])     (MiMo: concat[hidden, embedding])
    x = layers(x)                                                  (full-attention decoder layer(s), own KV cache)
    out = norm(x);  logits = lm_head(out)                          (embedding table and LM head: the target's)

Entry t of the head's cache pairs hidden t with token t+1, so after the target has verified a round the head
catches up on the accepted positions in one pass, and that pass's last output drafts the first token. Later
draft tokens chain: the head's own output `out` stands in for the target's hidden state it does not have yet
(MTPLX and mlx-lm #990 agree on this; they differ on the target's state, post- or pre-norm: `LAST_POST_NORM`
and `LAST_PRE_NORM` in `engine/decoding/hidden_states.py`). Those chained entries are guesses, and are dropped
again before the next round feeds the target's own states.

The layers are the target's own decoder-layer class from mlx-lm (its full-attention variant), built with the
target's arguments, so the head computes what the published checkpoint was trained with. Loading the weights
(`mtp.*` in the checkpoint or MTPLX's `mtp.safetensors` sidecar, which mlx-lm's loaders drop) is in
`mtp_loading.py`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.base import create_attention_mask
from mlx_lm.models.cache import KVCache

from ..errors import UnsupportedModelError

Concat = Literal["embedding_hidden", "hidden_embedding"]


class MTPHead(nn.Module):
    """The head's own weights, under the names Qwen publishes them (`mtp.` removed).

    Args:
        blocks: the decoder layer(s) the fused input runs through, in order.
        hidden_size, eps: the target's width and RMSNorm epsilon.
        concat: which half of fc's input is the embedding ("embedding_hidden": Qwen, DeepSeek; MiMo the other).
    """

    def __init__(self, blocks: list[nn.Module], hidden_size: int, eps: float, concat: Concat = "embedding_hidden") -> None:
        super().__init__()
        self.pre_fc_norm_embedding = nn.RMSNorm(hidden_size, eps=eps)
        self.pre_fc_norm_hidden = nn.RMSNorm(hidden_size, eps=eps)
        self.fc = nn.Linear(2 * hidden_size, hidden_size, bias=False)
        self.layers = blocks
        self.norm = nn.RMSNorm(hidden_size, eps=eps)
        self.concat = concat

    def __call__(self, embeddings: mx.array, hidden: mx.array, cache: list[Any]) -> mx.array:
        """(B, L, H) embeddings of tokens t+1 and hidden states at t -> the head's normed outputs (B, L, H)."""
        e, h = self.pre_fc_norm_embedding(embeddings), self.pre_fc_norm_hidden(hidden)
        x = self.fc(mx.concatenate([e, h] if self.concat == "embedding_hidden" else [h, e], axis=-1))
        mask = create_attention_mask(x, cache[0])
        for layer, layer_cache in zip(self.layers, cache):
            x = layer(x, mask, layer_cache)
        return self.norm(x)


def text_model(target: nn.Module) -> nn.Module:
    """The part of an mlx-lm model that holds `model`, `args` and the LM head (Qwen3.5 nests it as `language_model`)."""
    inner = getattr(target, "language_model", None)
    return inner if isinstance(inner, nn.Module) else target


def head_blocks(target: nn.Module, count: int) -> list[nn.Module]:
    """`count` fresh decoder layers of the target's full-attention kind, built from the target's own arguments.

    Hybrid targets (Qwen3.5, Qwen3-Next) interleave GatedDeltaNet layers with attention; the head is always an
    attention layer, so the class is built as the target's first attention layer was (same index, same MLP).
    """
    text = text_model(target)
    layers = getattr(text, "layers", None)
    args = getattr(text, "args", None)
    if not layers or args is None:
        raise UnsupportedModelError(f"{type(target).__name__} is not a model whose built-in MTP head SpecChat can build.")
    index = next((i for i, layer in enumerate(layers) if not getattr(layer, "is_linear", False)), 0)
    cls = type(layers[index])
    takes_index = "layer_idx" in inspect.signature(cls.__init__).parameters
    return [cls(args, layer_idx=index) if takes_index else cls(args) for _ in range(count)]


class SharedParts:
    """The target's embedding table and LM head, which the head reads through (it has neither of its own)."""

    def __init__(self, target: nn.Module) -> None:
        text = text_model(target)
        inner = getattr(text, "model", None)
        if inner is None or not hasattr(inner, "embed_tokens"):
            raise UnsupportedModelError(f"{type(target).__name__} has no embedding table an MTP head could share.")
        self.embed_tokens = inner.embed_tokens
        head = getattr(text, "lm_head", None)
        self.lm_head = head if head is not None else self.embed_tokens.as_linear

    def embed(self, ids: mx.array) -> mx.array:
        return self.embed_tokens(ids)

    def logits(self, hidden: mx.array) -> mx.array:
        return self.lm_head(hidden)


class EntryHead(Protocol):
    """What `MTPRunner` drives: a head of layers (a cache each) over entries, as `MTPHead` and EAGLE-3's are."""

    @property
    def layers(self) -> Sequence[nn.Module]: ...

    def __call__(self, embeddings: mx.array, hidden: mx.array, cache: list[Any], /) -> mx.array: ...


class MTPRunner:
    """The head bound to its target for a chat: its KV cache of entries, and the two passes the drafter runs.

    Attributes:
        head: the head's network.
        shared: the target's embedding table and LM head.
        cache: one KVCache per head layer; `entries` of them are filled.
    """

    def __init__(self, head: EntryHead, target: nn.Module) -> None:
        self.head = head
        self.shared = SharedParts(target)
        self.reset()

    @property
    def entries(self) -> int:
        return int(self.cache[0].offset)

    def reset(self) -> None:
        """Forget every entry (a fresh cache)."""
        self.cache = [KVCache() for _ in self.head.layers]

    def rewind(self, entries: int) -> None:
        """Keep the first `entries` entries."""
        drop = self.entries - entries
        if drop > 0:
            for layer in self.cache:
                layer.trim(drop)

    def project(self, states: list[mx.array]) -> mx.array:
        """A target pass's tapped states (one tap: the last hidden state) as the (L, H) states entries read."""
        return states[0]

    def feed(self, hidden: mx.array, next_ids: mx.array) -> mx.array:
        """Append entries pairing hidden states (L, H) with the ids (L,) that follow them; (L, H) outputs, lazy."""
        return self.head(self.shared.embed(next_ids)[None], hidden[None], self.cache)[0]

    def logits(self, outputs: mx.array) -> mx.array:
        """Logits of the tokens the outputs (L, H) predict."""
        return self.shared.logits(outputs)
