"""DSpark's drafter network in MLX (DeepSeek's DeepSpec): DFlash's backbone plus a Markov head and a confidence head.

The backbone is DFlash's, unchanged: the target's tapped hidden states (each tapped layer's output), concatenated,
go through `fc` and `hidden_norm` and become the keys and values of a context that a few Qwen3 layers attend to;
the queries are a block [last token, mask x (B - 1)] seen bidirectionally, in one pass. What DSpark adds is small:

- slot 0 drafts too (DeepSpec's "anchor as position 0"): a block of 7 drafts 7 tokens. Heads warm-started from
  DFlash say `logits_start: 1` (or `sample_from_anchor: false`) and draft from slot 1 on, as DFlash does;
- a low-rank Markov head: step i's logits are the block's logits at i plus `markov_w2(markov_w1[previous token])`,
  so each drafted token depends on the one drafted before it (one small sequential step per position);
- a confidence head: `sigmoid(proj(concat[hidden_i, markov_w1[previous token]]))` is the chance that position i
  survives verification given the positions before it did; the draft is cut where the running product of these
  falls under a threshold, which is how DSpark chooses its own draft length.

DeepSeek's published heads carry their own copies of the target's embedding table and LM head
(`embed_tokens.weight`, `lm_head.weight`); heads that ship neither borrow the target's (see dspark.py). The
arithmetic follows mlx-dspark (`mlx_dspark/model.py`), which `tests/engine/drafters/test_dspark.py` checks on the
same weights; we write it here rather than import it because that package pins a Metal-only stack around it.
"""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx
import mlx.nn as nn

from .dflash_model import DFlashConfig, DFlashModel


@dataclass
class DSparkConfig:
    """The backbone (DFlash's shape and taps) and DSpark's own settings.

    Attributes:
        backbone: the Qwen3 layers, `fc`'s taps, the mask token and the block size.
        markov_rank: the Markov head's rank; 0 when the head has none.
        confidence: whether it has a confidence head.
        confidence_with_markov: whether that head also reads the previous token's Markov embedding.
        logits_start: the first block slot that drafts (0 for DeepSpec's heads, 1 for DFlash-derived ones).
        own_embeddings: whether the folder ships `embed_tokens.weight` (else the target's table is used).
        own_head: whether it ships `lm_head.weight` (else the target's LM head is used).
    """

    backbone: DFlashConfig
    markov_rank: int
    confidence: bool
    confidence_with_markov: bool
    logits_start: int = 0
    own_embeddings: bool = True
    own_head: bool = True

    @property
    def max_draft(self) -> int:
        """The most tokens one block drafts."""
        return self.backbone.block_size - self.logits_start


class VanillaMarkov(nn.Module):
    """DeepSpec's "vanilla" Markov head: a rank-r bias on step i's logits from the token drafted at i - 1."""

    def __init__(self, vocab_size: int, rank: int) -> None:
        super().__init__()
        self.markov_w1 = nn.Embedding(vocab_size, rank)
        self.markov_w2 = nn.Linear(rank, vocab_size, bias=False)

    def bias(self, previous: mx.array) -> mx.array:
        return self.markov_w2(self.markov_w1(previous))


class ConfidenceHead(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, 1)

    def __call__(self, features: mx.array) -> mx.array:
        """The chance (0..1) that each position survives verification, given those before it did."""
        return mx.sigmoid(self.proj(features).squeeze(-1))


class DSparkModel(DFlashModel):
    """The drafter's weights under their published names: DFlash's `fc`, `hidden_norm`, `layers`, `norm`, and
    `markov_head`, `confidence_head`, with `embed_tokens` and `lm_head` when the folder ships them."""

    def __init__(self, config: DSparkConfig) -> None:
        super().__init__(config.backbone)
        self.dspark = config
        size, vocab = config.backbone.hidden_size, config.backbone.vocab_size
        if config.own_embeddings:
            self.embed_tokens = nn.Embedding(vocab, size)
        if config.own_head:
            self.lm_head = nn.Linear(size, vocab, bias=False)
        if config.markov_rank:
            self.markov_head = VanillaMarkov(vocab, config.markov_rank)
        if config.confidence:
            extra = config.markov_rank if config.confidence_with_markov else 0
            self.confidence_head = ConfidenceHead(size + extra)

    def __call__(self, block: mx.array, context: mx.array, cache: list) -> mx.array:
        """Normed hidden states (1, L - logits_start, H) of the block's drafting slots; the context (1, S, n*H)
        joins `cache` as in DFlash."""
        h = block
        context = self.hidden_norm(self.fc(context))
        for layer, layer_cache in zip(self.layers, cache):
            h = layer(h, context, self._rope, layer_cache)
        return self.norm(h[:, self.dspark.logits_start :])

    def step_logits(self, logits: mx.array, previous: mx.array) -> mx.array:
        """A step's logits (.., V) with the Markov bias from the previous token (ids shaped like logits[..., 0])."""
        return logits + self.markov_head.bias(previous) if self.dspark.markov_rank else logits

    def survival(self, hidden: mx.array, previous: mx.array) -> mx.array | None:
        """Each position's confidence (L,) from its hidden state (L, H) and the token before it (L,); None
        without a confidence head."""
        if not self.dspark.confidence:
            return None
        features = hidden
        if self.dspark.confidence_with_markov:
            features = mx.concatenate([hidden, self.markov_head.markov_w1(previous)], axis=-1)
        return self.confidence_head(features)


def confident_length(confidence: list[float], threshold: float) -> int:
    """How many leading positions to verify: while the running product of the confidences stays at or above the
    threshold (DSpark's §3.2.1 survival rule), and at least one."""
    survival, keep = 1.0, 0
    for value in confidence:
        survival *= value
        if survival < threshold:
            break
        keep += 1
    return max(1, keep)
