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


def int_item(array: mx.array) -> int:
    """A one-element integer array's value as a Python int (a token id)."""
    _check_integer(array)
    return cast(int, array.item())


def float_list(array: mx.array) -> list[float]:
    """A float array's values, flattened, as Python floats (a round's one read, logprobs)."""
    if not mx.issubdtype(array.dtype, mx.floating):
        raise TypeError(f"Expected a float array, not {array.dtype}: cast it with astype first.")
    return cast("list[float]", array.reshape(-1).tolist())


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


def load_arrays(*paths: Path) -> dict[str, mx.array]:
    """The named arrays of .safetensors or .npz files, merged (a model's shards); `mx.load` gives a dict for these
    formats, and a single array for .npy."""
    arrays: dict[str, mx.array] = {}
    for path in paths:
        if path.suffix not in (".safetensors", ".npz"):
            raise ValueError(f"load_arrays reads .safetensors and .npz files, not {path.name}.")
        arrays.update(cast("dict[str, mx.array]", mx.load(str(path))))
    return arrays
