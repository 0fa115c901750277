"""Rotary scaling that llama.cpp stores as tensors, turned back into the config.json fields mlx-lm reads.

Llama 3.1/3.2 files carry `rope_freqs`: one factor per rotary frequency, computed by llama.cpp's converter from
the model's `rope_scaling` (factor, low/high frequency factors, original context), which the file does not keep.
The parameters are found again by recomputing the factors for the few values Llama 3 models use and keeping
the set that reproduces the tensor; a tensor no set reproduces is refused rather than guessed. Phi-3's long
and short factors are stored as they are and copied.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..errors import UnsupportedModelError

_ORIGINAL_CONTEXTS = (8192, 4096, 2048, 16384, 32768, 65536)
_LOW_FREQ_FACTORS = (1.0, 2.0, 0.5)
_HIGH_FREQ_FACTORS = (4.0, 2.0, 8.0, 1.0)


def llama3_factors(scaling: dict[str, Any], dims: int, base: float) -> np.ndarray:
    """The per-frequency factors llama.cpp computes for Llama 3 rope scaling (what mlx-lm's Llama3RoPE applies);
    `scaling` is a config's `rope_scaling`: numbers, and its `rope_type` name."""
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    original = scaling["original_max_position_embeddings"]
    wavelens = 2 * math.pi * base ** (np.arange(0, dims, 2) / dims)
    smooth = (original / wavelens - low) / (high - low) if high != low else np.zeros_like(wavelens)
    medium = 1.0 / ((1 - smooth) / factor + smooth)
    return np.where(wavelens < original / high, 1.0, np.where(wavelens > original / low, factor, medium))


def llama3_rope_scaling(factors: np.ndarray, dims: int, base: float) -> dict[str, Any]:
    """The `rope_scaling` whose factors are `factors`, or one line saying the file's scaling is not Llama 3's."""
    factors = np.asarray(factors, dtype=np.float64).reshape(-1)
    for original, low, high in itertools.product(_ORIGINAL_CONTEXTS, _LOW_FREQ_FACTORS, _HIGH_FREQ_FACTORS):
        if high <= low:
            continue
        scaling = {"rope_type": "llama3", "factor": float(factors.max()), "low_freq_factor": low,
                   "high_freq_factor": high, "original_max_position_embeddings": original}
        if len(factors) == dims // 2 and np.allclose(llama3_factors(scaling, dims, base), factors, rtol=1e-3):
            return scaling
    raise UnsupportedModelError(
        "This GGUF stores rope frequency factors that match no Llama 3 rope scaling, so the importer cannot "
        "rebuild them. Use the model's MLX version from the Hugging Face hub instead."
    )
