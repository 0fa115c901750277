"""Joining the ring: a Mac that never shows up ends the wait with one line naming it (no hang)."""

from __future__ import annotations

import sys

import pytest

from engine.distributed.group import is_rank
from engine.distributed.local_launch import run_ranks

from .commands import ROOT

pytestmark = pytest.mark.distributed


def test_is_rank_needs_a_rank_and_a_hostfile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLX_RANK", raising=False)
    assert not is_rank()
    monkeypatch.setenv("MLX_RANK", "1")
    monkeypatch.setenv("MLX_HOSTFILE", "/tmp/ring.json")
    assert is_rank()


def test_a_rank_that_never_joins_ends_the_wait_with_one_line() -> None:
    # Two ranks in the hostfile, but rank 1 leaves at once: it never connects.
    join = ("import os, sys\nif os.environ['MLX_RANK'] == '1': sys.exit(0)\n"
            "from engine.distributed.ring_noise import quiet_ring_messages\nquiet_ring_messages()\n"
            "from engine.distributed.group import join_ring\njoin_ring(timeout=3)")
    results = run_ranks([sys.executable, "-c", join], 2, timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert results[0].returncode not in (0, None)  # ended, not joined, not hanging
    assert results[0].stderr.strip().splitlines() == [
        "error: could not connect to 127.0.0.1 (rank 1) within 3 s: check that each Mac is on and reachable at that "
        "address, and that SpecChat runs there."
    ]
