"""How many layers each Mac runs: in proportion to the memory it has free for them, not evenly.

mlx-lm splits a pipeline evenly, which runs out of memory on Macs of unequal size (a 64 GB and a 24 GB Mac
cannot each hold half of a 70 GB model). Each rank states the memory it can give (`stated_memory_gb`: what MLX
may use on it, or `SPECCHAT_SHARD_MEMORY_GB` set on that Mac), less what it holds besides its layers (the head:
the embeddings, the output head and the draft model); layers go in proportion to what is left, at least one
each, and a split that cannot fit is refused with the numbers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from ..errors import DistributedError

MEMORY_ENV = "SPECCHAT_SHARD_MEMORY_GB"


def stated_memory_gb() -> float:
    """The memory this Mac offers the pipeline: `SPECCHAT_SHARD_MEMORY_GB` if set, else what MLX may use here."""
    from ..models.memory import usable_memory_gb

    stated = os.environ.get(MEMORY_ENV)
    return float(stated) if stated else usable_memory_gb()


def split_layers(num_layers: int, free_gb: Sequence[float], layer_gb: float, reserved_gb: Sequence[float]) -> list[int]:
    """Layers per rank (index = rank), in proportion to each rank's free memory less what it reserves.

    Largest remainders round the shares; every rank gets at least one layer. Raises a one-line error when the
    ranks are more than the layers, or when the layers do not fit in what the ranks have left.
    """
    size = len(free_gb)
    if size > num_layers:
        raise DistributedError(f"The model has {num_layers} layers, fewer than the {size} Macs: use at most {num_layers}.")
    room = [max(free - reserved, 0.0) for free, reserved in zip(free_gb, reserved_gb)]
    need = num_layers * layer_gb
    caps = [math.floor(r / layer_gb) if layer_gb else num_layers for r in room]
    if sum(caps) < num_layers:
        raise DistributedError(
            f"The model's layers need {need:.1f} GB but the Macs have {sum(room):.1f} GB free for them "
            f"({', '.join(f'{r:.1f}' for r in room)} GB): add a Mac or pick a smaller model."
        )
    if min(caps) < 1:
        short = caps.index(min(caps))
        raise DistributedError(
            f"Rank {short} has {room[short]:.1f} GB free, less than one layer ({layer_gb:.2f} GB): free memory there "
            "or leave that Mac out of the hostfile."
        )
    shares = [num_layers * r / sum(room) for r in room] if sum(room) else [num_layers / size] * size
    split = [math.floor(s) for s in shares]
    for r in sorted(range(size), key=lambda r: shares[r] - split[r], reverse=True)[: num_layers - sum(split)]:
        split[r] += 1
    for r in range(size):  # every rank runs a layer; none more than it holds
        while split[r] < 1 or split[r] > caps[r]:
            giver, taker = (_most_spare(split, caps, r), r) if split[r] < 1 else (r, _most_room(split, caps, r))
            split[giver] -= 1
            split[taker] += 1
    return split


def _most_spare(split: list[int], caps: list[int], other_than: int) -> int:
    """The rank that can best give a layer away (the most layers above one)."""
    return max((r for r in range(len(split)) if r != other_than), key=lambda r: split[r])


def _most_room(split: list[int], caps: list[int], other_than: int) -> int:
    """The rank with the most room for one more layer."""
    return max((r for r in range(len(split)) if r != other_than), key=lambda r: caps[r] - split[r])
