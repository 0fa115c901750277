"""A spilled prefix's file written from bytes the engine thread hands over: the very file mlx-lm writes."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path

import mlx.core as mx
import pytest
from mlx_lm.models.cache import KVCache, load_prompt_cache, save_prompt_cache

from engine.decoding.cached_model import _kv_prefix
from engine.decoding.prompt_cache_writer import IN_FLIGHT, SpillWriter, spill_file, write


def _prefix(dtype: mx.Dtype, layers: int = 3, length: int = 300, kept: int = 270) -> list[KVCache]:
    """What a spilled twin holds: views of the first `kept` positions of each layer's buffer (strided: a buffer
    has room beyond its positions)."""
    cache = []
    for _ in range(layers):
        layer = KVCache()
        layer.update_and_fetch(*(mx.random.normal((1, 2, length, 8)).astype(dtype) for _ in range(2)))
        cache.append(_kv_prefix(layer, kept))
    return cache


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_a_spilled_file_loads_as_the_one_save_prompt_cache_writes(tmp_path: Path, dtype: mx.Dtype) -> None:
    cache = _prefix(dtype)
    metadata = {"specchat": '{"tokens": [1, 2]}'}
    save_prompt_cache(str(tmp_path / "mlx-lm.safetensors"), cache, metadata)
    spill = spill_file(cache, metadata)
    assert spill is not None and write(spill, tmp_path / "ours.safetensors", tmp_path / ".ours.tmp")
    theirs, ours = (mx.load(str(tmp_path / name), return_metadata=True) for name in ("mlx-lm.safetensors", "ours.safetensors"))
    assert ours[1] == theirs[1] and ours[0].keys() == theirs[0].keys()
    assert all(ours[0][k].dtype == theirs[0][k].dtype and mx.array_equal(ours[0][k], theirs[0][k]).item() for k in ours[0])
    loaded, meta = load_prompt_cache(str(tmp_path / "ours.safetensors"), return_metadata=True)
    assert meta == metadata and [layer.offset for layer in loaded] == [270] * 3
    assert spill.nbytes == (tmp_path / "ours.safetensors").stat().st_size


def test_a_disk_that_refuses_the_file_leaves_no_temporary(tmp_path: Path) -> None:
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    spill = spill_file(_prefix(mx.float32), {})
    assert spill is not None and not write(spill, blocked / "x.safetensors", tmp_path / ".x.tmp")
    assert sorted(p.name for p in tmp_path.iterdir()) == [blocked.name]


def test_no_more_than_in_flight_files_are_under_way_before_the_engine_waits(tmp_path: Path, monkeypatch) -> None:
    """A disk slower than the spills: the next spill waits for the first file, so the memory they hold stays bounded."""
    from engine.decoding import prompt_cache_writer

    gate = threading.Event()
    monkeypatch.setattr(prompt_cache_writer, "write", lambda *args: gate.wait(timeout=120))
    writer, spill = SpillWriter(), spill_file(_prefix(mx.float32), {})
    assert spill is not None
    futures = [writer.submit(spill, tmp_path / f"{i}", tmp_path / f".{i}") for i in range(IN_FLIGHT)]
    first = futures[0]
    monkeypatch.setattr(first, "result", lambda: (gate.set(), Future.result(first))[1])  # waited for: the disk catches up
    assert not gate.is_set()
    futures.append(writer.submit(spill, tmp_path / "next", tmp_path / ".next"))
    assert gate.is_set() and first.done()  # the engine waited for the first file before handing over the next
    writer.close()
    assert all(f.result() for f in futures)
