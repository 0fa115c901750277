"""MLX values at the types the code holds them at.

MLX's stubs are wider than any one use: `array.tolist()` may be any scalar or a nested list, `tree_flatten` a list
of pairs or a dict (the dict only when given a `destination`), and `mx.load` an array, a dict or a tuple
(by the file's format). Each helper here checks what makes the narrow type true, once, so that callers need no
casts.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import mlx.core as mx
from mlx.utils import tree_flatten


def int_list(array: mx.array) -> list[int]:
    """An integer array's values, flattened, as Python ints (token ids, a message's words)."""
    _check_integer(array)
    return cast("list[int]", array.reshape(-1).tolist())


def int_rows(array: mx.array) -> list[list[int]]:
    """A 2-D integer array's rows as lists of Python ints (one row per rank, per sequence)."""
    _check_integer(array)
    if array.ndim != 2:
        raise ValueError(f"int_rows takes a 2-D array, not one of shape {tuple(array.shape)}: reshape it first.")
    return cast("list[list[int]]", array.tolist())


def _check_integer(array: mx.array) -> None:
    if not mx.issubdtype(array.dtype, mx.integer):
        raise TypeError(f"Expected an integer array, not {array.dtype}: round or cast it with astype first.")


def named_arrays(tree: object) -> list[tuple[str, mx.array]]:
    """The (dotted name, array) leaves of a parameter tree, as `model.parameters()` returns it (MLX's
    `tree_flatten`, whose leaves there are arrays)."""
    return cast("list[tuple[str, mx.array]]", tree_flatten(tree))


def load_arrays(path: Path) -> dict[str, mx.array]:
    """The named arrays of a .safetensors file (a path of another format would give `mx.load` a single array)."""
    if path.suffix != ".safetensors":
        raise ValueError(f"load_arrays reads .safetensors files, not {path.name}.")
    return cast("dict[str, mx.array]", mx.load(str(path)))
