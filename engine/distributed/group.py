"""Joining the ring: MLX's `ring` backend, with a watchdog, since a Mac that never shows up would hang the rest.

`mx.distributed.init(backend="ring")` connects each rank to its neighbours from `MLX_HOSTFILE` (written by
`mlx.launch` or `local_launch.py`). A rank that connects gives up after about 30 s; a rank that accepts waits
forever, holding Python's lock (no thread can run meanwhile). Every rank therefore joins before loading anything,
and a watcher process writes one line naming the other Macs and ends this one if the ring is not complete within
`JOIN_TIMEOUT_S`.
"""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Callable

import mlx.core as mx

from ..errors import DistributedError
from .cores import pin_to_core
from .hostfile import LOOPBACK, host_label, ring_addresses
from .ring_noise import terminal_fd

JOIN_TIMEOUT_S = float(os.environ.get("SPECCHAT_JOIN_TIMEOUT_S") or 60)


def is_rank() -> bool:
    """Whether this process was started as one rank of a ring (by mlx.launch or local_launch.py)."""
    return "MLX_RANK" in os.environ and bool(os.environ.get("MLX_HOSTFILE"))


def join_ring(timeout: float = JOIN_TIMEOUT_S) -> mx.distributed.Group:
    """This process's group: every rank of the hostfile connected, or one error line and the end after `timeout`."""
    rank = int(os.environ.get("MLX_RANK", "0"))
    if all(address == LOOPBACK for address in ring_addresses()):
        pin_to_core(rank)  # several ranks on this machine (mlx.launch with 127.0.0.1 hosts): a core each
    others = ", ".join(host_label(r) for r in range(len(ring_addresses())) if r != rank)
    joined = _watch_the_join(timeout, f"error: could not connect to {others} within {timeout:.0f} s: check that each "
                                      "Mac is on and reachable at that address, and that SpecChat runs there.")
    try:
        return mx.distributed.init(strict=True, backend="ring")
    except RuntimeError as e:
        raise DistributedError(f"Could not join the ring as rank {rank} ({e}). Check MLX_HOSTFILE and the network.") from e
    finally:
        joined()


def _watch_the_join(timeout: float, message: str) -> Callable[[], None]:
    """Start a watcher process that, unless told within `timeout` that the join ended, writes `message` and kills
    this process. A thread cannot do it: MLX's init holds the interpreter's lock while it waits for peers.
    Returns the call that tells it the join ended."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    terminal = os.dup(terminal_fd())  # the pipe of ring_noise.py would die with this process, unread
    pid = os.fork()
    if pid == 0:  # the watcher: nothing but raw system calls (safe after a fork in a threaded process)
        os.close(write_end)
        ready, _, _ = select.select([read_end], [], [], timeout)
        if not ready:
            os.write(terminal, (message + "\n").encode())
            os.kill(parent, signal.SIGKILL)
        os._exit(0)
    os.close(read_end)
    os.close(terminal)

    def joined() -> None:
        os.close(write_end)  # the watcher sees the end of the pipe and leaves
        os.waitpid(pid, 0)

    return joined
