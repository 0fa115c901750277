"""A model's layers cut into stages, one per rank, for any mlx-lm model whose layers all use plain KV caches.

mlx-lm pipelines only the models that carry its `PipelineMixin` (qwen2, qwen3_5, qwen3_moe, DeepSeek-style);
`sharded_load` raises for llama or dense qwen3. Here the model's layer list is cut to this rank's run of layers
and the run's ends are wrapped, as exo does: the first local layer receives its input from the previous stage,
the last one sends its output to the next. The model's own `__call__` is untouched, so its embeddings, mask and
norm work as written (the mask reads the first local layer's cache, which holds as many positions as every
other layer's).

Stages follow mlx-lm's convention: rank 0 runs the last layers (the head holds the output), rank N-1 the first
ones, so activations flow N-1 -> ... -> 0 between ring neighbours.

Unlike mlx-lm (and exo), the last stage's output is not all-gathered to every rank: there every rank samples the
same token, here the head alone decides and tells the others in its next message (`messages.py`), so the gather
would cost a hop per pass for logits nobody else reads. Nor is a send kept in the graph with `mx.depends`: each
hop is evaluated where it is issued (`transport.py`), which keeps sends from being dropped and every rank's
collectives in one order.

Models whose layers differ in kind (sliding windows, recurrent state) index layers or caches by their place in
the whole model (Gemma 3, Llama with `layer_types`): they are refused with one line rather than cut wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import KVCache, make_prompt_cache

from ..errors import UnsupportedModelError
from .transport import Transport


@dataclass(frozen=True)
class Stage:
    """The run of layers [start, end) one rank holds, of `size` ranks."""

    rank: int
    size: int
    start: int
    end: int

    @property
    def first(self) -> bool:
        """Whether this rank embeds the tokens (it runs layer 0)."""
        return self.rank == self.size - 1

    @property
    def last(self) -> bool:
        """Whether this rank holds the output (the head)."""
        return self.rank == 0


def stages(split: list[int]) -> list[Stage]:
    """The stage of every rank from layers per rank (`split[r]` layers for rank r; rank 0 runs the last ones)."""
    size = len(split)
    return [Stage(r, size, sum(split[r + 1 :]), sum(split[r:])) for r in range(size)]


class _Receiving(nn.Module):
    """A stage's first layer: its input is the previous stage's output, received (the local input only gives
    the shape and type)."""

    def __init__(self, layer: nn.Module, transport: Transport, peer: int) -> None:
        super().__init__()
        self.layer = layer
        self._transport = transport
        self._peer = peer

    def __call__(self, x: mx.array, *args: Any, **kwargs: Any) -> mx.array:
        return self.layer(self._transport.recv_like(x, self._peer), *args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # the wrapped layer's attributes (use_sliding, self_attn, ...)
        try:
            return super().__getattr__(name)
        except AttributeError:
            layer = self.get("layer")
            if layer is None:
                raise
            return getattr(layer, name)


class _Sending(_Receiving):
    """A stage's last layer: its output goes to the next stage (sent at once, see transport.py)."""

    def __call__(self, x: mx.array, *args: Any, **kwargs: Any) -> mx.array:
        out = self.layer(x, *args, **kwargs)
        self._transport.send(out, self._peer)
        return out


def layer_owner(model: nn.Module) -> nn.Module:
    """The module whose `layers` list the model's forward pass iterates (`model.model` in mlx-lm's models)."""
    for owner in (getattr(model, "model", None), getattr(getattr(model, "language_model", None), "model", None), model):
        if owner is not None and isinstance(owner.get("layers") if isinstance(owner, dict) else None, list):
            return owner
    raise UnsupportedModelError(
        f"SpecChat cannot find the layers of this {type(model).__module__} model to split it across Macs. "
        "Run it on one Mac."
    )


def check_pipelinable(model: nn.Module, model_type: str) -> None:
    """Refuse a model whose layers are not all plain attention (their stages would be cut wrongly)."""
    kinds = sorted({type(c).__name__ for c in make_prompt_cache(model)})
    if kinds != [KVCache.__name__]:
        raise UnsupportedModelError(
            f"A {model_type!r} model has layers of several kinds ({', '.join(kinds)}), which SpecChat cannot split "
            "across Macs yet: run it on one Mac, or pick a model whose layers are all full attention "
            "(Llama, Qwen2, Qwen3, Mistral)."
        )


def cut(model: nn.Module, stage: Stage, transport: Transport) -> None:
    """Keep only this stage's layers in the model, receiving before the first and sending after the last."""
    owner = layer_owner(model)
    layers = list(owner["layers"][stage.start : stage.end])
    if not stage.first:
        layers[0] = _Receiving(layers[0], transport, peer=stage.rank + 1)
    if not stage.last:
        layers[-1] = _Sending(layers[-1], transport, peer=stage.rank - 1)
    owner["layers"] = layers
