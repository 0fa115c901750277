"""Turning a GGUF file's tensors into mlx-lm's weights, one tensor at a time, still quantized.

For each tensor: its Hugging Face name (`gguf_architectures`), its values read in row chunks
(`gguf_tensors.TensorFile`), llama.cpp's changes undone (llama's permuted q/k rows, Gemma's 1 + w norms), and
either MLX quantization at the source's precision or bf16 for what the source kept in floats. The
`quantization` block of config.json records what was done, as mlx-lm writes it, so `mlx_lm.load` reads the
folder as one of its own conversions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .gguf_architectures import ARCHITECTURES, Architecture, hf_name
from .gguf_header import TensorInfo
from .gguf_tensors import (
    Quantization,
    ShardWriter,
    TensorFile,
    concatenate_parts,
    hf_shape,
    quantization_for,
    quantize_rows,
    source_row_bytes,
)

ProgressCallback = Callable[[int, int], None]
# The weights stage moves its bar in slices of 1/PROGRESS_STEPS of the bytes (or of a tensor that needs reading
# whole, or one row), but none under MIN_STEP_BYTES: a tiny file's tensors need no slicing.
PROGRESS_STEPS = 200
MIN_STEP_BYTES = 1 << 20


def write_weights(
    tensors: list[TensorInfo], source: Path, config: dict[str, Any], arch: str, writer: ShardWriter,
    progress: ProgressCallback | None = None,
) -> dict[str, Quantization]:
    """Add every tensor of the file that mlx-lm loads to `writer` (the caller finishes it: writing the last shard
    is a stage of its own); return how each quantized layer is stored (by module path). `progress` gets (bytes read, bytes in all tensors) once the
    stage starts and after every slice of at most 1/`PROGRESS_STEPS` of the bytes (a small model's embedding
    is a third of it); it may raise to cancel, between any two slices."""
    architecture = ARCHITECTURES[arch]
    loaded = [t for t in tensors if hf_name(t.name, arch) is not None]
    steps = _Steps(sum(t.n_bytes for t in loaded), progress)
    layers: dict[str, Quantization] = {}
    steps.advance(0)  # the stage starts now, before its first slice
    with TensorFile(source) as file:
        for tensor in loaded:
            name = hf_name(tensor.name, arch)
            assert name is not None
            for out_name, array in _converted(file, tensor, name, config, architecture, layers, steps):
                writer.add(out_name, array)
    return layers


class _Steps:
    """The weights stage's progress in bytes read of the file's tensors, and the slice size that keeps each step
    of the bar small."""

    def __init__(self, total: int, progress: ProgressCallback | None) -> None:
        self.total, self.done, self._progress = total, 0, progress
        self.read_bytes = max(total // PROGRESS_STEPS, MIN_STEP_BYTES)

    def advance(self, read: int) -> None:
        self.done += read
        if self._progress:
            self._progress(self.done, self.total)

    def reported(self, chunks: Iterator[np.ndarray], row_bytes: int) -> Iterator[np.ndarray]:
        """`chunks`, each reported once its consumer asks for the next: read and converted by then, so the bar
        moves with the work done and a cancel raised from the report stops before the next read."""
        for chunk in chunks:
            yield chunk
            self.advance(len(chunk) * row_bytes)


def quantization_config(layers: dict[str, Quantization]) -> dict[str, Any] | None:
    """config.json's `quantization`: the most common parameters as the default, the others per layer."""
    if not layers:
        return None
    default = Counter(layers.values()).most_common(1)[0][0]
    config: dict[str, Any] = default.as_config()
    config.update({path: q.as_config() for path, q in sorted(layers.items()) if q != default})
    return config


def _converted(
    file: TensorFile, tensor: TensorInfo, name: str, config: dict[str, Any], architecture: Architecture,
    layers: dict[str, Quantization], steps: _Steps,
) -> list[tuple[str, Any]]:
    """The MLX arrays one GGUF tensor becomes: (name, array) pairs, its progress reported slice by slice."""
    import mlx.core as mx

    shape = hf_shape(tensor)
    quantization = quantization_for(tensor.tensor_type.name, shape) if name.endswith(".weight") else None
    if _needs_whole_tensor(name, architecture):
        values = _as_hf(file.read(tensor), name, config, architecture)
        chunks: Iterator[np.ndarray] = iter([values.reshape(-1, shape[-1])])
    else:
        chunks = file.chunks(tensor, read_bytes=steps.read_bytes)
    chunks = steps.reported(chunks, source_row_bytes(tensor))
    if quantization is None:
        array = mx.concatenate([mx.array(c).astype(mx.bfloat16) for c in chunks]).reshape(shape)
        mx.eval(array)
        return [(name, array)]
    parts = concatenate_parts([quantize_rows(c, quantization) for c in chunks], shape)
    module = name.removesuffix(".weight")
    layers[module] = quantization
    suffixes = ("weight", "scales", "biases")
    return [(f"{module}.{suffix}", part) for suffix, part in zip(suffixes, parts)]


def _needs_whole_tensor(name: str, architecture: Architecture) -> bool:
    """Whether undoing llama.cpp's change needs the whole tensor at once (row permutations; norm shifts are
    elementwise but norms are small, so they are read whole too)."""
    if architecture.rotary_permuted and name.endswith(("q_proj.weight", "k_proj.weight")):
        return True
    return bool(architecture.norm_shift) and name.endswith("norm.weight")


def _as_hf(array: np.ndarray, name: str, config: dict[str, Any], architecture: Architecture) -> np.ndarray:
    """A tensor as the Hugging Face checkpoint had it, before llama.cpp's converter changed it."""
    if architecture.rotary_permuted and name.endswith(("q_proj.weight", "k_proj.weight")):
        return unpermute_rotary(array, config["num_attention_heads" if "q_proj" in name else "num_key_value_heads"])
    if architecture.norm_shift and name.endswith("norm.weight"):
        return array - architecture.norm_shift
    return array


def unpermute_rotary(weight: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's reordering of q/k rows (it interleaves each head's rotary halves for its kernel)."""
    rows = weight.shape[0]
    return weight.reshape(n_head, rows // n_head // 2, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)
