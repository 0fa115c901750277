"""A rank's share of the target: the model built lazily (no weights read), then only this stage's weights read.

mlx-lm's lazy loading leaves every weight unread until it is evaluated. A rank builds the whole model that way,
which costs nothing and gives the shapes for the fingerprint and the layer sizes for the split; after the split
it cuts the model to its stage (`pipeline.cut`) and reads its own layers, plus the embeddings on the first stage
and the norm and output head on the head. The rest is never read from disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from ..arrays import named_arrays
from ..models.loading import build_model, resolve_model_path, use_float32_on_cpu
from .pipeline import Stage, check_pipelinable, layer_owner


@dataclass
class LazyModel:
    """The whole model, built but not read, with what the split needs to know about it."""

    spec: str
    path: Any
    model: nn.Module
    config: dict[str, Any]

    @property
    def num_layers(self) -> int:
        return len(layer_owner(self.model)["layers"])

    def layer_gb(self) -> float:
        """The size of one layer in GB (the layers of the dense models a pipeline takes are alike)."""
        return _gb(layer_owner(self.model)["layers"]) / max(self.num_layers, 1)

    def outer_gb(self) -> float:
        """What the head holds besides its layers: embeddings, norm and output head."""
        return _gb(self.model) - _gb(layer_owner(self.model)["layers"])


def build_lazily(spec: str) -> LazyModel:
    """The model named `spec`, built with no weight read, refused if it cannot be split into stages."""
    path = resolve_model_path(spec)
    model, config = build_model(spec, path, lazy=True)
    check_pipelinable(model, str(config.get("model_type", "unknown")))
    return LazyModel(spec, path, model, config)


def read_stage(model: nn.Module, stage: Stage) -> None:
    """Read (evaluate) the weights this stage runs, once `pipeline.cut` left only its layers in the model."""
    use_float32_on_cpu(model, evaluate=False)
    owner = layer_owner(model)
    wanted: list[Any] = [layer.parameters() for layer in owner["layers"]]
    if stage.last or (stage.first and "embed_tokens" not in owner):
        wanted.append(model.parameters())
    elif stage.first:
        wanted.append(owner["embed_tokens"].parameters())
    mx.eval(wanted)


def _gb(tree: Any) -> float:
    params = tree.parameters() if isinstance(tree, nn.Module) else [layer.parameters() for layer in tree]
    return sum(array.nbytes for _, array in named_arrays(params)) / 1e9
