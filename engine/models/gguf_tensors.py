"""Reading a GGUF file's tensors in bounded memory and writing them back, still quantized, as MLX shards.

A 7B Q4_K_M file is 4.4 GB; dequantized whole to float32 it would be ~28 GB. So a tensor is read from the file
in row chunks of at most `CHUNK_BYTES` of float32 and of one progress step's share of the file (never through
the reader's memory map, whose touched pages would all count against the process), dequantized by the `gguf`
package (which reads every block format it knows, so we keep no list of our own), and quantized again chunk by
chunk with MLX's own `mx.quantize` at the bits nearest the source: it quantizes each row on its own, so how rows
are chunked never changes a byte. Finished tensors collect in a shard that is written once it reaches `SHARD_BYTES`.
Peak memory is then about one shard plus one tensor's quantized form plus one chunk.

Why re-quantize rather than dequantize to bf16: a user who picked Q4 did so because bf16 does not fit. Group
size 32 is every GGUF block format's (sub)block of 32 values, so 4-bit sources keep their block structure.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UnsupportedModelError

CHUNK_BYTES = 64 << 20  # float32 bytes dequantized at a time
SHARD_BYTES = 512 << 20  # safetensors shard size
GROUP_SIZE = 32
FLOAT_TYPES = ("F32", "F16", "BF16", "F64")
# The MLX bits nearest each GGUF family's precision (by the name's leading digits: Q4_K -> 4, IQ3_S -> 3 ...).
MLX_BITS = (2, 3, 4, 5, 6, 8)
MXFP4_TYPES = ("MXFP4",)


@dataclass(frozen=True)
class Quantization:
    """How one tensor is stored in the MLX folder: mlx-lm's per-layer quantization parameters."""

    bits: int
    group_size: int = GROUP_SIZE
    mode: str = "affine"

    def as_config(self) -> dict[str, Any]:
        """As mlx-lm writes it in config.json's `quantization`."""
        return {"group_size": self.group_size, "bits": self.bits, "mode": self.mode}


def source_bits(type_name: str) -> int | None:
    """The precision of a GGUF tensor type in bits per weight (None for float types), for choosing MLX bits."""
    if type_name in FLOAT_TYPES:
        return None
    digits = "".join(c for c in type_name.split("_")[0] if c.isdigit())
    return int(digits) if digits else 4


def quantization_for(type_name: str, shape: tuple[int, ...]) -> Quantization | None:
    """How a weight of this GGUF type and (HF-layout) shape is kept, or None to keep it as floats.

    Float sources stay floats (mlx-lm would not quantize what the author left unquantized); a quantized source
    is quantized again unless its rows do not split into groups.
    """
    bits = source_bits(type_name)
    if bits is None or len(shape) < 2 or shape[-1] % GROUP_SIZE:
        return None
    if type_name in MXFP4_TYPES:
        return Quantization(4, 32, "mxfp4")
    return Quantization(min(MLX_BITS, key=lambda b: (abs(b - bits), -b)))


class TensorFile:
    """Reads tensors of an open GGUF file by row ranges, without its memory map."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDONLY)

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> TensorFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chunks(self, tensor: Any, chunk_bytes: int = CHUNK_BYTES, read_bytes: int | None = None) -> Iterator[np.ndarray]:
        """The tensor as float32 rows (HF layout, leading dimensions flattened), at most `chunk_bytes` of float32
        and `read_bytes` of the file at a time (a progress step: never less than a row)."""
        cols, rows = _columns_and_rows(tensor)
        row_bytes = source_row_bytes(tensor)
        step = chunk_bytes // (cols * 4)
        if read_bytes is not None:
            step = min(step, read_bytes // row_bytes)
        step = max(1, step)
        for start in range(0, rows, step):
            count = min(step, rows - start)
            raw = os.pread(self._fd, count * row_bytes, tensor.data_offset + start * row_bytes)
            yield _dequantize(raw, tensor, count, cols)

    def read(self, tensor: Any) -> np.ndarray:
        """The whole tensor as float32 in HF layout (for the small tensors that need reordering)."""
        return np.concatenate(list(self.chunks(tensor, chunk_bytes=1 << 62))).reshape(hf_shape(tensor))


def hf_shape(tensor: Any) -> tuple[int, ...]:
    """A GGUF tensor's shape in row-major (Hugging Face) order: ggml lists dimensions innermost first."""
    return tuple(int(d) for d in reversed(tensor.shape))


def source_row_bytes(tensor: Any) -> int:
    """The bytes one row (the innermost dimension) of a tensor takes in the file: every block format's blocks
    tile a row, so a row is a whole number of blocks."""
    block, type_size = _block_format(tensor)
    return int(tensor.shape[0]) // block * type_size


def _columns_and_rows(tensor: Any) -> tuple[int, int]:
    dims = [int(d) for d in tensor.shape]
    return dims[0], math.prod(dims[1:])


def _block_format(tensor: Any) -> tuple[int, int]:
    import gguf

    return gguf.GGML_QUANT_SIZES[tensor.tensor_type]


def _dequantize(raw: bytes, tensor: Any, rows: int, cols: int) -> np.ndarray:
    """Rows of raw tensor bytes as float32, by the `gguf` package; a type it cannot read gets one line."""
    import gguf

    kind = tensor.tensor_type.name
    floats = {"F32": np.float32, "F16": np.float16, "F64": np.float64}
    if kind in floats:
        return np.frombuffer(raw, dtype=floats[kind]).astype(np.float32).reshape(rows, cols)
    try:
        values = gguf.quants.dequantize(np.frombuffer(raw, dtype=np.uint8).reshape(rows, -1), tensor.tensor_type)
    except NotImplementedError as e:
        raise UnsupportedModelError(
            f"Tensor {tensor.name} is stored as {kind}, which the gguf package cannot dequantize ({e}). "
            "Pick a GGUF with another quantization of this model, or update the gguf package."
        ) from e
    return np.asarray(values, dtype=np.float32).reshape(rows, cols)


def quantize_rows(rows: np.ndarray, quantization: Quantization) -> list[Any]:
    """One chunk of rows quantized by MLX: [weight, scales] (+ [biases] for affine), evaluated."""
    import mlx.core as mx

    parts = mx.quantize(mx.array(rows).astype(mx.bfloat16), group_size=quantization.group_size,
                        bits=quantization.bits, mode=quantization.mode)
    mx.eval(*parts)
    return list(parts)


def concatenate_parts(chunks: list[list[Any]], shape: tuple[int, ...]) -> list[Any]:
    """Quantized chunks joined and given the tensor's leading dimensions back (experts' 3-D weights)."""
    import mlx.core as mx

    joined = [mx.concatenate(list(parts)) if len(parts) > 1 else parts[0] for parts in zip(*chunks)]
    out = [mx.reshape(a, (*shape[:-1], a.shape[-1])) for a in joined]
    mx.eval(*out)
    return out


class ShardWriter:
    """Collects finished tensors and writes them as safetensors shards of about `shard_bytes` each.

    Shards are numbered as written and renamed `model-0000i-of-0000n.safetensors` at the end, with the index
    Hugging Face and mlx-lm read, because the count is only known then.
    """

    def __init__(self, folder: Path, shard_bytes: int = SHARD_BYTES, on_flush: Callable[[], None] | None = None) -> None:
        self.folder = folder
        self.shard_bytes = shard_bytes
        self._pending: dict[str, Any] = {}
        self._pending_bytes = 0
        self._written: list[tuple[Path, list[str]]] = []
        self._on_flush = on_flush

    def add(self, name: str, array: Any) -> None:
        if self._pending and self._pending_bytes + array.nbytes > self.shard_bytes:
            self.flush()
        self._pending[name] = array
        self._pending_bytes += array.nbytes

    def flush(self) -> None:
        import mlx.core as mx

        if not self._pending:
            return
        path = self.folder / f"shard-{len(self._written) + 1:05d}.safetensors"
        mx.save_safetensors(str(path), self._pending, metadata={"format": "mlx"})
        self._written.append((path, list(self._pending)))
        self._pending, self._pending_bytes = {}, 0
        mx.clear_cache()  # return the shard's buffers to the system, not to MLX's cache
        if self._on_flush:
            self._on_flush()

    def finish(self) -> list[Path]:
        """Write what is pending, name the shards as mlx-lm's own conversions do, and write the index."""
        self.flush()
        count = len(self._written)
        weight_map, names = {}, []
        for index, (path, tensors) in enumerate(self._written, start=1):
            name = "model.safetensors" if count == 1 else f"model-{index:05d}-of-{count:05d}.safetensors"
            path.rename(self.folder / name)
            names.append(self.folder / name)
            weight_map.update({tensor: name for tensor in tensors})
        total = sum(p.stat().st_size for p in names)
        if count > 1:
            index_file = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
            (self.folder / "model.safetensors.index.json").write_text(json.dumps(index_file, indent=2))
        return names
