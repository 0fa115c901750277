"""Putting a drafter's published weights into its module: strictly, with one line when they do not fit."""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx
import mlx.nn as nn

from ..errors import NotAModelError
from ..models.folder_kind import folder_name
from ..models.loading import use_float32_on_cpu


def load_strictly(module: nn.Module, weights: dict[str, mx.array], path: Path, what: str) -> None:
    """Load every weight (none missing, none extra), then evaluate it in float32 on the CPU as targets are.

    `what` names the weights in the error ("MTP weights", "weights ... DFlash config"): a folder whose weights
    do not fit its config is a broken download, said in one line rather than mlx's list of names.
    """
    try:
        module.load_weights(list(weights.items()), strict=True)
    except ValueError as e:
        detail = " ".join(str(e).split())[:160]
        raise NotAModelError(f"{folder_name(path)}'s {what} ({detail}). Download it again.") from e
    module.eval()
    use_float32_on_cpu(module)
    mx.eval(module.parameters())
