"""MLX values at narrow types: each helper returns plain Python values, and refuses what would make its type a lie."""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import pytest

from engine.arrays import float_list, int_item, int_list, int_rows, load_arrays, named_arrays


def test_int_list_flattens_an_integer_array_into_python_ints() -> None:
    values = int_list(mx.array([[3, -1], [7, 2]], dtype=mx.int32))
    assert values == [3, -1, 7, 2]
    assert all(type(v) is int for v in values)


def test_int_list_refuses_a_float_array() -> None:
    with pytest.raises(TypeError, match="integer array, not mlx.core.float32"):
        int_list(mx.array([1.5, 2.0]))


def test_int_item_reads_a_token_id_as_a_python_int() -> None:
    value = int_item(mx.array([7], dtype=mx.uint32))
    assert value == 7 and type(value) is int


def test_int_item_refuses_a_float_array() -> None:
    with pytest.raises(TypeError, match="integer array, not mlx.core.float32"):
        int_item(mx.array(7.0))


def test_float_list_flattens_a_float_array_into_python_floats() -> None:
    values = float_list(mx.array([[0.5, -2.0], [3.0, 1.25]]))
    assert values == [0.5, -2.0, 3.0, 1.25]
    assert all(type(v) is float for v in values)


def test_float_list_refuses_an_integer_array() -> None:
    with pytest.raises(TypeError, match="float array, not mlx.core.int32"):
        float_list(mx.array([1, 2], dtype=mx.int32))


def test_int_rows_keeps_the_rows_of_a_matrix() -> None:
    rows = int_rows(mx.array([[1, 2, 3], [4, 5, 6]], dtype=mx.uint32))
    assert rows == [[1, 2, 3], [4, 5, 6]]
    assert all(type(v) is int for row in rows for v in row)


def test_int_rows_refuses_an_array_that_is_not_2_d() -> None:
    with pytest.raises(ValueError, match=r"2-D array, not one of shape \(3,\)"):
        int_rows(mx.array([1, 2, 3]))


def test_named_arrays_names_every_parameter_of_a_module() -> None:
    layer = nn.Linear(3, 2)
    named = dict(named_arrays(layer.parameters()))
    assert sorted(named) == ["bias", "weight"]
    assert named["weight"].shape == (2, 3)
    assert all(isinstance(a, mx.array) for a in named.values())


def test_load_arrays_reads_back_a_safetensors_file(tmp_path: Path) -> None:
    path = tmp_path / "weights.safetensors"
    mx.save_safetensors(str(path), {"a": mx.array([1, 2]), "b.c": mx.zeros((2, 2))})
    loaded = load_arrays(path)
    assert sorted(loaded) == ["a", "b.c"]
    assert loaded["a"].tolist() == [1, 2]


def test_load_arrays_merges_the_shards_of_a_model(tmp_path: Path) -> None:
    first, second = tmp_path / "model-1.safetensors", tmp_path / "model-2.npz"
    mx.save_safetensors(str(first), {"a": mx.array([1, 2])})
    mx.savez(str(second), b=mx.array([3]))
    loaded = load_arrays(first, second)
    assert sorted(loaded) == ["a", "b"]
    assert loaded["b"].tolist() == [3]


def test_load_arrays_refuses_another_format(tmp_path: Path) -> None:
    path = tmp_path / "weights.npy"
    mx.save(str(path), mx.array([1, 2]))
    with pytest.raises(ValueError, match="reads .safetensors and .npz files, not weights.npy"):
        load_arrays(path)
