"""Whether models fit this machine's memory, with the numbers to show the user.

On a Mac, models live in unified memory and Metal lets one process wire about three quarters of it (MLX
reports the recommended working-set size). Elsewhere we allow 80% of physical memory. Loading a pair that
does not fit swaps, or fails, so the app warns first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mlx.nn as nn

CPU_SHARE = 0.8
KV_AND_RUNTIME_GB = 0.5  # KV caches for a few thousand tokens, activations and the runtime


def physical_memory_gb() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9


def usable_memory_gb() -> float:
    """Memory the models may use: Metal's recommended working set on a Mac, else a share of RAM."""
    import mlx.core as mx

    if mx.default_device() == mx.gpu and mx.metal.is_available():
        size = mx.device_info().get("max_recommended_working_set_size")
        if isinstance(size, int) and size:
            return size / 1e9
    return CPU_SHARE * physical_memory_gb()


def peak_memory_gb() -> float:
    """The most memory MLX has held since the current generation began (the stats panel's "Peak memory"): at least
    what it holds now. MLX's own peak is reset to 0 when a generation begins and counts from its next allocation on,
    so while a message's first chunk was read the panel said "Peak memory 0 MB" beside a pair holding hundreds."""
    import mlx.core as mx

    return max(mx.get_peak_memory(), mx.get_active_memory()) / 1e9


def weight_bytes(model: nn.Module) -> int:
    """Bytes of a loaded model's parameters (quantized weights at their packed size): what one decoding step
    reads where decoding is memory-bound."""
    from ..arrays import named_arrays

    return sum(array.nbytes for _, array in named_arrays(model.parameters()))


def folder_size_gb(path: Path) -> float:
    """On-disk size of a model's weights (a folder's *.safetensors, or a file)."""
    if path.is_file():
        return path.stat().st_size / 1e9
    return sum(f.stat().st_size for f in path.glob("*.safetensors")) / 1e9


def estimate_memory_gb(weights_gb: float) -> float:
    """Memory to run models whose weights take `weights_gb` on disk, as they do on a Mac.

    (MLX's CPU backend computes half-precision weights in float32, which doubles them; that is a
    development-machine detail the estimate ignores.)
    """
    return weights_gb + KV_AND_RUNTIME_GB


@dataclass(frozen=True)
class Fit:
    """The verdict: `fits`, and the two numbers behind it."""

    required_gb: float
    available_gb: float

    @property
    def fits(self) -> bool:
        return self.required_gb <= self.available_gb

    def message(self) -> str:
        if self.fits:
            return f"Fits: needs about {self.required_gb:.1f} GB of the {self.available_gb:.1f} GB available to models."
        return (
            f"Does not fit: needs about {self.required_gb:.1f} GB but this machine gives models about "
            f"{self.available_gb:.1f} GB. It would swap heavily or fail; pick a smaller pair."
        )


def check_fit(required_gb: float, available_gb: float | None = None) -> Fit:
    return Fit(required_gb, usable_memory_gb() if available_gb is None else available_gb)
