"""A GGUF file's header: its metadata and its table of tensors, read in one pass over its bytes.

The `gguf` package's reader builds a numpy view of the memory map for every value it meets, so a vocabulary of
49,152 tokens and as many merges (SmolLM2) took 5-14 s on a busy CPU, and Gemma 3's 262,144 took 20-25 s: all
of it under a "Reading x.gguf" with no bar, before the import could say how far it was. The format is simple
(llama.cpp's docs/gguf.md): a magic, a version, counts, key/value pairs, then the tensors' names, shapes, types
and offsets. Read with `struct` from the memory map (only the header's pages are touched), the same header takes
a fraction of a second, and the values come out as `ReaderField.contents()` gave them (ints, floats, bools, str,
lists of them).
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
# GGUF's value types (gguf.GGUFValueType) and how each scalar is stored, little-endian.
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the file: where its bytes are and how they are laid out (ggml's dimension order, innermost
    first, as the `gguf` package gives `ReaderTensor.shape`)."""

    name: str
    tensor_type: Any  # gguf.GGMLQuantizationType
    shape: tuple[int, ...]
    n_bytes: int
    data_offset: int


@dataclass(frozen=True)
class Header:
    metadata: dict[str, Any]
    tensors: list[TensorInfo]


def read_header(path: Path) -> Header:
    """The file's metadata and tensors; ValueError for a file that is not a GGUF this reads (its message says why)."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        try:
            return _Parser(data).header()
        except (struct.error, IndexError, UnicodeDecodeError) as e:
            raise ValueError(f"its header is cut short or damaged: {e}") from e


class _Parser:
    """Walks the header from its first byte; each read moves `offset` past what it read."""

    def __init__(self, data: mmap.mmap) -> None:
        self.data, self.offset = data, 0

    def header(self) -> Header:
        if self.data[:4] != MAGIC:
            raise ValueError("it does not start with GGUF's magic bytes")
        self.offset = 4
        version = self.scalar("<I")
        if version not in VERSIONS:
            big_endian = version & 0xFFFF == 0
            raise ValueError("it is a big-endian GGUF" if big_endian else f"it is GGUF version {version} (2 and 3 are read)")
        tensor_count, kv_count = self.scalar("<Q"), self.scalar("<Q")
        metadata = {}
        for _ in range(kv_count):
            key = self.string()
            metadata[key] = self.value(self.scalar("<I"))
        table = [self.tensor_entry() for _ in range(tensor_count)]
        alignment = int(metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        if alignment <= 0 or alignment & (alignment - 1):
            raise ValueError(f"its alignment {alignment} is not a power of two")
        start = -(-self.offset // alignment) * alignment
        return Header(metadata, [_tensor(name, shape, kind, start + at) for name, shape, kind, at in table])

    def scalar(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.data, self.offset)
        self.offset += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        length = self.scalar("<Q")
        end = self.offset + length
        if end > len(self.data):
            raise IndexError(f"a string of {length} bytes runs past the file's end")
        text = self.data[self.offset:end].decode("utf-8")
        self.offset = end
        return text

    def value(self, kind: int) -> Any:
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            item_kind, count = self.scalar("<I"), self.scalar("<Q")
            if item_kind in SCALARS:  # numbers in one unpack: a vocabulary's token types are 49k-262k of them
                fmt = SCALARS[item_kind]
                values = list(struct.unpack_from(f"<{count}{fmt[1]}", self.data, self.offset))
                self.offset += count * struct.calcsize(fmt)
                return values
            return [self.value(item_kind) for _ in range(count)]
        if kind in SCALARS:
            return self.scalar(SCALARS[kind])
        raise ValueError(f"it has a value of unknown type {kind}")

    def tensor_entry(self) -> tuple[str, tuple[int, ...], int, int]:
        name = self.string()
        dims = self.scalar("<I")
        shape = tuple(self.scalar("<Q") for _ in range(dims))
        return name, shape, self.scalar("<I"), self.scalar("<Q")


def _tensor(name: str, shape: tuple[int, ...], kind: int, data_offset: int) -> TensorInfo:
    import gguf

    try:
        tensor_type = gguf.GGMLQuantizationType(kind)
    except ValueError as e:
        raise ValueError(f"tensor {name} has a type ({kind}) the gguf package does not know") from e
    block, type_size = gguf.GGML_QUANT_SIZES[tensor_type]
    return TensorInfo(name, tensor_type, shape, math.prod(shape) * type_size // block, data_offset)
