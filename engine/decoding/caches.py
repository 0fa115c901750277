"""Caches of every model family, and the one rule that keeps speculation exact on all of them.

mlx-lm builds one cache per layer (docs/design.md, "Caches of every family"):

- `KVCache`, `QuantizedKVCache`, `ConcatenateKVCache`: keys and values in order; dropping the last n is O(1).
- `RotatingKVCache` (sliding-window attention): keeps exactly the window and overwrites its oldest slot in
  place, so once the context is longer than the window a verify pass overwrites entries a rejection needs
  again. We replace it with `WindowKVCache`, which keeps `slack` more positions than attention reads (the
  attention mask limits each query to its window) in temporal order: dropping up to `slack` positions is
  exact at any length.
- `ArraysCache` (linear attention, SSM and convolution state): one state that every token updates; it cannot
  drop anything. It is snapshotted instead (MLX arrays are immutable and these models replace their state
  arrays rather than write into them, so a snapshot is a list of references), and restored on a rejection;
  the accepted tokens are then fed again with the next pass.
- `ChunkedKVCache`: drops within the current chunk; `CacheList`: a layer with several caches, each by its rule.

The rule: after a rewind a cache holds exactly the accepted prefix, by dropping, by restoring a snapshot, or
(when neither is possible) by starting over; it never keeps entries it believes are gone. Every cache type is
checked before anything is dropped, at rewind time. A layer type not listed here is not rewindable at all.
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
from mlx_lm.models.base import create_causal_mask
from mlx_lm.models.cache import (
    ArraysCache,
    CacheList,
    ChunkedKVCache,
    ConcatenateKVCache,
    KVCache,
    QuantizedKVCache,
    RotatingKVCache,
    _BaseCache,
    make_prompt_cache,
)

from ..arrays import named_arrays

# Positions a sliding-window layer keeps beyond its window: the longest draft a round verifies (params.RANGES
# allows 64), the correction, and a margin.
WINDOW_SLACK = 72
_OFFSET_CACHES = (KVCache, QuantizedKVCache, ConcatenateKVCache)


class WindowKVCache(_BaseCache):
    """Keys and values of the last `window - 1 + slack` positions of a sliding-window attention layer.

    Stored in temporal order in a buffer that grows by `step`; when full, its oldest part is cut away in one
    copy. `offset` counts every position seen (the rotary position of the next token).

    Args:
        window: how many positions a query attends to (itself included), as the model was trained.
        slack: how many positions beyond that are kept, so that dropping that many is always exact.
    """

    step = 256

    def __init__(self, window: int, slack: int = WINDOW_SLACK) -> None:
        self.window = window
        self.slack = slack
        self.keys: mx.array | None = None
        self.values: mx.array | None = None
        self.offset = 0
        self.start = 0  # buffer index of the oldest position kept
        self.end = 0  # buffer index after the newest

    @property
    def held(self) -> int:
        return self.end - self.start

    def update_and_fetch(self, keys: mx.array, values: mx.array) -> tuple[mx.array, mx.array]:
        length = keys.shape[2]
        if self.keys is None or self.end + length > self.keys.shape[2]:
            self._regrow(keys, values, length)
        buffer_keys, buffer_values = self._buffers()
        buffer_keys[..., self.end : self.end + length, :] = keys
        buffer_values[..., self.end : self.end + length, :] = values
        self.end += length
        self.offset += length
        fetched = buffer_keys[..., self.start : self.end, :], buffer_values[..., self.start : self.end, :]
        self.start = max(self.start, self.end - (self.window - 1 + self.slack))
        return fetched

    def _regrow(self, keys: mx.array, values: mx.array, length: int) -> None:
        """A new buffer holding what is kept, with room for `length` more positions and a step."""
        batch, heads, _, key_dim = keys.shape
        capacity = self.held + length + self.step
        new_keys = mx.zeros((batch, heads, capacity, key_dim), keys.dtype)
        new_values = mx.zeros((batch, heads, capacity, values.shape[3]), values.dtype)
        if self.keys is not None and self.values is not None and self.held:
            new_keys[..., : self.held, :] = self.keys[..., self.start : self.end, :]
            new_values[..., : self.held, :] = self.values[..., self.start : self.end, :]
        self.keys, self.values, self.start, self.end = new_keys, new_values, 0, self.held

    def _buffers(self) -> tuple[mx.array, mx.array]:
        """The key and value buffers, which exist together from the first update on."""
        if self.keys is None or self.values is None:
            raise RuntimeError("WindowKVCache has no buffers before its first update_and_fetch.")
        return self.keys, self.values

    def make_mask(self, N: int, window_size: int | None = None, return_array: bool = False):  # mlx-lm's API
        """Each of the N new queries sees its own window of the kept positions and itself."""
        window = window_size or self.window
        if self.held + N <= window and not return_array:
            return None if N == 1 else "causal"
        return create_causal_mask(N, self.held, window_size=window)

    def can_drop(self, n: int) -> bool:
        """Whether the last n positions can go while the next query still finds its whole window."""
        return n <= self.held and self.held - n >= min(self.window - 1, self.offset - n)

    def trim(self, n: int) -> int:
        n = min(n, self.held)
        self.end -= n
        self.offset -= n
        return n

    def is_trimmable(self) -> bool:
        return True

    def snapshot(self) -> tuple[int, mx.array, mx.array] | None:
        """The kept positions as they are now (slices do not change when the buffer is written later)."""
        if self.keys is None or self.values is None:
            return None
        return self.offset, self.keys[..., self.start : self.end, :], self.values[..., self.start : self.end, :]

    def restore(self, snapshot: tuple[int, mx.array, mx.array] | None) -> None:
        if snapshot is None:
            self.keys = self.values = None
            self.offset = self.start = self.end = 0
            return
        self.offset, keys, self.values = snapshot
        self.keys, self.start, self.end = keys, 0, keys.shape[2]

    @property  # type: ignore[misc]  # read only: a window cache is never saved to disk, so nothing sets its state
    def state(self) -> list[mx.array]:
        """What evaluating the cache evaluates (a prefill chunk is evaluated to keep memory flat)."""
        return [] if self.keys is None or self.values is None else [self.keys, self.values]

    def size(self) -> int:
        return min(self.offset, self.window)

    def empty(self) -> bool:
        return self.keys is None

    @property
    def nbytes(self) -> int:
        return 0 if self.keys is None or self.values is None else self.keys.nbytes + self.values.nbytes


def make_cache(model: Any, kv_bits: int | None = None, group: int | None = None, slack: int = WINDOW_SLACK) -> list[Any]:
    """The model's mlx-lm cache, with sliding windows made rewindable and, with `kv_bits`, full-attention keys
    and values quantized in groups of `group` (mlx-lm's QuantizedKVCache; None: `quantization_group(model)`).
    Sliding windows stay in full precision, and so does a model `quantization_group` finds no group for."""
    if kv_bits and group is None:
        group = quantization_group(model)
    return [_adapt(layer, kv_bits, group, slack) for layer in make_prompt_cache(model)]


def quantization_group(model: Any) -> int | None:
    """The group size keys and values of this model quantize in (MLX groups of 64 or 32 along the head size);
    None when they cannot be: no group divides the head size, or attention has sinks (gpt-oss), which MLX's
    quantized attention does not support."""
    if any(name.endswith("sinks") for name, _ in named_arrays(model.parameters())):
        return None
    args = getattr(model, "args", None)
    head_dim = getattr(args, "head_dim", None) or (
        getattr(args, "hidden_size", 0) // max(getattr(args, "num_attention_heads", 0) or 1, 1)
    )
    return next((g for g in (64, 32) if head_dim and head_dim % g == 0), None)


def _adapt(layer: Any, kv_bits: int | None, group: int | None, slack: int) -> Any:
    if isinstance(layer, CacheList):
        layer.caches = tuple(_adapt(c, kv_bits, group, slack) for c in layer.caches)
        return layer
    if type(layer) is RotatingKVCache and layer.keep == 0:
        return WindowKVCache(layer.max_size, slack)
    if type(layer) is KVCache and kv_bits and group:
        return QuantizedKVCache(group_size=group, bits=kv_bits)
    return layer


def supported(layer: Any) -> bool:
    """Whether the rule knows how to rewind this cache type."""
    if isinstance(layer, CacheList):
        return all(supported(c) for c in layer.caches)
    return isinstance(layer, (*_OFFSET_CACHES, WindowKVCache, ArraysCache, ChunkedKVCache))


def holds_state(layer: Any) -> bool:
    """Whether the layer keeps a recurrent state that cannot drop tokens (it needs snapshots to rewind)."""
    if isinstance(layer, CacheList):
        return any(holds_state(c) for c in layer.caches)
    return isinstance(layer, ArraysCache)


def slides(layer: Any) -> bool:
    """Whether the layer keeps only a window of the context (rewinds beyond its slack need a snapshot)."""
    if isinstance(layer, CacheList):
        return any(slides(c) for c in layer.caches)
    return isinstance(layer, (WindowKVCache, ChunkedKVCache))


def can_drop(layer: Any, n: int) -> bool:
    """Whether dropping the last n positions leaves exactly the rest."""
    if n == 0:
        return True
    if isinstance(layer, CacheList):
        return all(can_drop(c, n) for c in layer.caches)
    if isinstance(layer, WindowKVCache):
        return layer.can_drop(n)
    if isinstance(layer, ChunkedKVCache):
        return n <= layer.offset - layer.start_position
    if isinstance(layer, _OFFSET_CACHES):
        return n <= layer.offset
    return False


def drop(layer: Any, n: int) -> None:
    """Drop the last n positions (check `can_drop` first)."""
    if isinstance(layer, CacheList):
        for c in layer.caches:
            drop(c, n)
    elif n:
        layer.trim(n)


def snapshot(layer: Any, whole: bool) -> Any:
    """What restoring this layer needs beyond dropping: recurrent state always, a window's positions when
    `whole` (a checkpoint to return to from far ahead). None: dropping will do."""
    if isinstance(layer, CacheList):
        return [snapshot(c, whole) for c in layer.caches]
    if isinstance(layer, ArraysCache):
        return list(layer.cache)
    if isinstance(layer, WindowKVCache) and whole:
        return ("window", layer.snapshot())
    return None


def restorable(layer: Any, saved: Any, n: int) -> bool:
    """Whether `restore` can bring the layer back by `n` positions with what `snapshot` saved."""
    if isinstance(layer, CacheList):
        return all(restorable(c, s, n) for c, s in zip(layer.caches, saved))
    return saved is not None or can_drop(layer, n)


def restore(layer: Any, saved: Any, n: int) -> None:
    """Bring the layer back to a checkpoint `n` positions behind where it is."""
    if isinstance(layer, CacheList):
        for c, s in zip(layer.caches, saved):
            restore(c, s, n)
    elif isinstance(layer, ArraysCache):
        layer.cache = list(saved)
    elif saved is not None:
        layer.restore(saved[1])
    else:
        drop(layer, n)
