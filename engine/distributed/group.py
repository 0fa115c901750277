"""Joining the ring: MLX's `ring` backend, with a watchdog, since a Mac that never shows up would hang the rest.

`mx.distributed.init(backend="ring")` connects each rank to its neighbours from `MLX_HOSTFILE` (written by
`mlx.launch` or `local_launch.py`). A rank that connects gives up after about 30 s; a rank that accepts waits
forever. Every rank therefore joins before loading anything, and a watchdog ends this process with one line
naming the other Macs if the ring is not complete within `JOIN_TIMEOUT_S`.
"""

from __future__ import annotations

import os
import threading

import mlx.core as mx

from ..errors import DistributedError
from .cores import pin_to_core
from .hostfile import LOOPBACK, host_label, ring_addresses
from .ring_noise import urgent

JOIN_TIMEOUT_S = float(os.environ.get("SPECCHAT_JOIN_TIMEOUT_S") or 60)


def is_rank() -> bool:
    """Whether this process was started as one rank of a ring (by mlx.launch or local_launch.py)."""
    return "MLX_RANK" in os.environ and bool(os.environ.get("MLX_HOSTFILE"))


def join_ring(timeout: float = JOIN_TIMEOUT_S) -> mx.distributed.Group:
    """This process's group: every rank of the hostfile connected, or one error line and exit after `timeout`."""
    rank = int(os.environ.get("MLX_RANK", "0"))
    if all(address == LOOPBACK for address in ring_addresses()):
        pin_to_core(rank)  # several ranks on this machine (mlx.launch with 127.0.0.1 hosts): a core each
    done = threading.Event()

    def give_up() -> None:
        if not done.wait(timeout):
            others = ", ".join(host_label(r) for r in range(len(ring_addresses())) if r != rank)
            urgent(f"error: could not connect to {others} within {timeout:.0f} s: check that each Mac is on and "
                   "reachable at that address, and that SpecChat runs there.")
            os._exit(1)

    threading.Thread(target=give_up, daemon=True, name="join-watchdog").start()
    try:
        group = mx.distributed.init(strict=True, backend="ring")
    except RuntimeError as e:
        raise DistributedError(f"Could not join the ring as rank {rank} ({e}). Check MLX_HOSTFILE and the network.") from e
    finally:
        done.set()
    return group

