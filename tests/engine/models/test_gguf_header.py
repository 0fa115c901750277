"""A GGUF file's header read in one pass: the same metadata and tensors as the `gguf` package's reader gives (whose
per-value numpy views took 20-60 s over a large vocabulary), and a damaged header refused in words."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from engine.errors import NotAModelError
from engine.models.gguf_header import Header, read_header
from engine.models.gguf_import import import_gguf
from tests.engine.models.test_gguf_import import TYPES, _write_synthetic


def assert_as_the_gguf_package_reads_it(path: Path, header: Header) -> None:
    reader = gguf.GGUFReader(path)
    metadata = {key: field.contents() for key, field in reader.fields.items() if not key.startswith("GGUF.")}
    assert list(header.metadata) == list(metadata) and header.metadata == metadata
    assert [type(v) for v in header.metadata.values()] == [type(v) for v in metadata.values()]
    expected = [(t.name, t.tensor_type, tuple(int(d) for d in t.shape), int(t.n_bytes), int(t.data_offset)) for t in reader.tensors]
    assert [(t.name, t.tensor_type, t.shape, t.n_bytes, t.data_offset) for t in header.tensors] == expected


def test_every_block_format_reads_as_the_gguf_package_reads_it(tmp_path: Path) -> None:
    path, _, _ = _write_synthetic(tmp_path, TYPES)
    assert_as_the_gguf_package_reads_it(path, read_header(path))


def test_every_value_type_and_a_wider_alignment_read_as_the_gguf_package_reads_them(tmp_path: Path) -> None:
    """Scalars of each width and sign, bools, floats, strings and arrays of each; tensors aligned to 64 bytes."""
    path = tmp_path / "values.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_custom_alignment(64)
    values = {"u8": (7, gguf.GGUFValueType.UINT8), "i8": (-7, gguf.GGUFValueType.INT8),
              "u16": (700, gguf.GGUFValueType.UINT16), "i16": (-700, gguf.GGUFValueType.INT16),
              "u32": (70_000, gguf.GGUFValueType.UINT32), "i32": (-70_000, gguf.GGUFValueType.INT32),
              "u64": (2**40, gguf.GGUFValueType.UINT64), "i64": (-(2**40), gguf.GGUFValueType.INT64),
              "f32": (1e-5, gguf.GGUFValueType.FLOAT32), "f64": (1e-300, gguf.GGUFValueType.FLOAT64),
              "yes": (True, gguf.GGUFValueType.BOOL), "text": ("é ⟨|im_end|⟩", gguf.GGUFValueType.STRING)}
    for key, (value, kind) in values.items():
        writer.add_key_value(key, value, kind)
    writer.add_array("floats", [0.5, -1.25])
    writer.add_array("words", ["Ġthe", "", "\n"])
    writer.add_array("flags", [True, False])
    writer.add_tensor("token_embd.weight", np.arange(24, dtype=np.float32).reshape(4, 6))
    writer.add_tensor("output_norm.weight", np.ones(6, dtype=np.float16))
    writer.write_header_to_file(); writer.write_kv_data_to_file(); writer.write_tensors_to_file(); writer.close()
    header = read_header(path)
    assert header.metadata["general.alignment"] == 64 and all(t.data_offset % 64 == 0 for t in header.tensors)
    assert_as_the_gguf_package_reads_it(path, header)


@pytest.mark.real_weights
def test_smollm2s_header_reads_as_the_gguf_package_reads_it(smollm_gguf: Path) -> None:
    """49,152 tokens, 48,900 merges and a chat template: the reader took 5-15 s over them, this under half a second."""
    assert_as_the_gguf_package_reads_it(smollm_gguf, read_header(smollm_gguf))


@pytest.mark.parametrize("damage, reason", [
    (lambda data: data[: len(data) // 3], "its header is cut short or damaged"),
    (lambda data: b"GGUF" + (3 << 24).to_bytes(4, "little") + data[8:], "it is a big-endian GGUF"),
    (lambda data: b"GGUF" + (9).to_bytes(4, "little") + data[8:], "it is GGUF version 9"),
    (lambda data: b"GGML" + data[4:], "it does not start with GGUF's magic bytes"),
])
def test_a_damaged_header_is_refused_in_one_line_that_says_what_is_wrong(tmp_path: Path, damage, reason: str) -> None:
    path, _, _ = _write_synthetic(tmp_path, TYPES)
    header_end = read_header(path).tensors[0].data_offset
    path.write_bytes(damage(path.read_bytes()[:header_end]))
    with pytest.raises(NotAModelError, match=f"is not a readable GGUF file \\({reason}"):
        import_gguf(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()
