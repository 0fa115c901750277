"""Writing a spilled prefix's file where no request waits for it: MLX hands over bytes, another thread writes them.

A prefix is spilled while a request waits (`PromptCache.recall` evicts it before the prompt's prefill), and
writing a 4k-token prefix of even a 135M model is ~190 MB. So the engine thread only describes the file and a
writer thread writes it, while the request goes on.

All MLX work stays on the engine thread (an MLX stream belongs to the thread that made it, and `mx.save_safetensors`
runs a `contiguous` op and an eval on the calling thread's stream). There `spill_file` takes each layer's keys and
values as bytes: a `uint8` view of the evaluated arrays, exported to NumPy without a copy (the views keep the
buffers alive, and MLX never writes into a buffer another array holds, so the live cache's next write copies
instead). The writer thread then does plain I/O on NumPy arrays: no MLX call, no stream.

The file is the one mlx-lm's `save_prompt_cache` writes (safetensors: each layer's state under "layer.index", its
offset an int32 scalar, and the metadata, the cache classes and the list of scalars flattened into the header's
metadata), so `load_prompt_cache` reads it back.
"""

from __future__ import annotations

import json
import os
import struct
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten

# The key and value types a KVCache holds, by their safetensors names (another type is not written).
SAFETENSORS_DTYPES = {mx.float32: "F32", mx.float16: "F16", mx.bfloat16: "BF16"}
IN_FLIGHT = 2  # files written or waiting at once: a third spill waits for the first (the memory they hold is bounded)


@dataclass
class SpillFile:
    """A file to write: its safetensors header, then each tensor's bytes (NumPy views of evaluated MLX arrays)."""

    header: bytes
    tensors: list[np.ndarray]

    @property
    def nbytes(self) -> int:
        return 8 + len(self.header) + sum(t.nbytes for t in self.tensors)


def spill_file(cache: list, metadata: dict[str, str]) -> SpillFile | None:
    """On the engine thread: a file holding `cache`'s layers as `save_prompt_cache` lays them out (each state's
    arrays, and its ints as int32 scalars it lists), its tensors as bytes no MLX call is needed to read; None for a
    state holding something else (a dtype safetensors cannot name)."""
    scalars: list[object] = [""]  # as save_prompt_cache has it: never empty
    parts: list[tuple[str, str, list[int], mx.array | np.ndarray]] = []  # name, dtype, shape, the bytes
    state: dict[str, Any] = {}  # "layer.index": each layer's keys, values and offset
    tree_flatten([layer.state for layer in cache], destination=state)
    for name, value in state.items():
        if isinstance(value, int) and not isinstance(value, bool):
            scalars.append((name, "scalar"))
            parts.append((name, "I32", [], np.array(value, dtype=np.int32)))
        elif isinstance(value, mx.array) and value.dtype in SAFETENSORS_DTYPES:
            parts.append((name, SAFETENSORS_DTYPES[value.dtype], list(value.shape), value.view(mx.uint8)))  # its buffer, as bytes
        else:
            return None
    mx.eval([data for *_, data in parts if isinstance(data, mx.array)])
    header: dict[str, object] = {"__metadata__": dict(tree_flatten([metadata, [type(layer).__name__ for layer in cache], scalars]))}
    tensors = [np.asarray(data) for *_, data in parts]  # views of the arrays' memory: no copy
    offset = 0
    for (name, dtype, shape, _), tensor in zip(parts, tensors):
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + tensor.nbytes]}
        offset += tensor.nbytes
    return SpillFile(json.dumps(header).encode(), tensors)


def write(spill: SpillFile, path: Path, temporary: Path) -> bool:
    """On the writer thread: write the file under `temporary`, then rename it to `path` (a crash leaves no half
    file under a real name). False if the disk refused (full, or a folder that cannot be written)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as out:
            out.write(struct.pack("<Q", len(spill.header)))
            out.write(spill.header)
            for tensor in spill.tensors:
                out.write(np.ascontiguousarray(tensor).data)  # a view of a prefix is strided: one tensor's copy at a time
        os.replace(temporary, path)
    except OSError:
        try:
            temporary.unlink(missing_ok=True)
        except OSError:
            pass  # left for the stale-temporary sweep
        return False
    return True


class SpillWriter:
    """One thread writing spilled files in the order they came, at most `IN_FLIGHT` at once."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None  # started by the first spill
        self._in_flight: list[Future[bool]] = []

    def submit(self, spill: SpillFile, path: Path, temporary: Path) -> Future[bool]:
        """Write `spill` on the writer thread; a future of whether it was written. Waits first while `IN_FLIGHT`
        files are under way (a disk slower than the spills holds their memory no longer)."""
        self._in_flight = [f for f in self._in_flight if not f.done()]
        while len(self._in_flight) >= IN_FLIGHT:
            self._in_flight.pop(0).result()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="specchat-spill")
        future = self._pool.submit(write, spill, path, temporary)
        self._in_flight.append(future)
        return future

    def close(self) -> None:
        """Finish every file under way and end the thread."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._in_flight = []
