"""What "the same model" means across Macs: a hash of the config and of every weight's name, shape and type.

Each rank hashes the model it is about to load a stage of, before reading any weights (shapes come from the
lazily loaded model), and the ranks compare hashes before the first token (`handshake.py`). Different weights
with the same shapes (a fine-tune) are not told apart; a different model, size, quantization or conversion is.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import mlx.nn as nn

from ..arrays import named_arrays

WORDS = 4  # the hash travels as this many int32s


def fingerprint(config: dict[str, Any], model: nn.Module) -> list[int]:
    """WORDS signed 32-bit integers from the SHA-256 of the config (its private "_" keys left out) and the weights' shapes."""
    digest = hashlib.sha256()
    public = {k: v for k, v in config.items() if not k.startswith("_")}
    digest.update(json.dumps(public, sort_keys=True, default=str).encode())
    for name, array in sorted(named_arrays(model.parameters()), key=lambda item: item[0]):
        digest.update(f"{name}:{tuple(array.shape)}:{array.dtype}".encode())
    raw = digest.digest()
    return [int.from_bytes(raw[4 * i : 4 * i + 4], "little", signed=True) for i in range(WORDS)]
