"""Ranks that share one machine each get a core of their own.

MLX's ring backend busy-polls while it waits to receive, so two ranks on one core take turns at a spin and a
pipeline step costs a scheduler slice per hop. Pinning rank r to core r (modulo the cores this process may use)
keeps every rank's spin on its own core. Only where the OS allows it (Linux); macOS has no affinity call.
"""

from __future__ import annotations

import os


def core_for(rank: int) -> int | None:
    """The core rank `rank` should run on, or None where pinning is not possible."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    return cores[rank % len(cores)]


def pin_to_core(rank: int) -> None:
    """Pin this process to rank `rank`'s core (nothing where pinning is not possible)."""
    core = core_for(rank)
    if core is not None:
        os.sched_setaffinity(0, {core})
