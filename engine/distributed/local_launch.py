"""Real ranks on one machine, over loopback: what the tests and the benchmark start instead of `mlx.launch`.

`mlx.launch` exits 0 when a rank fails and leaves its hostfiles in $TMPDIR, so tests launch the ranks
themselves: a free loopback port per rank, the ring's hostfile naming them, one process per rank with
`MLX_RANK` and `MLX_HOSTFILE` set, each pinned to its own core (the ring's receive busy-polls, so two ranks on
one core starve each other), every return code collected under a timeout (stragglers killed), and the hostfile
removed at the end.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from .cores import pin_to_core
from .hostfile import LOOPBACK


@dataclass
class RankResult:
    """How one rank ended: its return code (None: killed after the timeout) and what it wrote."""

    rank: int
    returncode: int | None
    stdout: str
    stderr: str


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports that were free a moment ago (bound together, so never the same one)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in socks:
            sock.bind((LOOPBACK, 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def first_of_free_ports(count: int, attempts: int = 50) -> int:
    """A port p such that p .. p+count-1 were all free a moment ago (mlx.launch counts up from its first port)."""
    for _ in range(attempts):
        first = free_ports(1)[0]
        socks = []
        try:
            for port in range(first, first + count):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(sock)
                sock.bind((LOOPBACK, port))
            return first
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise OSError(f"no {count} consecutive free loopback ports found")


def write_ring_hostfile(ports: Sequence[int], folder: Path) -> Path:
    """The ring's hostfile (MLX_HOSTFILE's format): one loopback "ip:port" per rank."""
    path = folder / "ring-hosts.json"
    path.write_text(json.dumps([[f"{LOOPBACK}:{port}"] for port in ports]))
    return path


class LocalRanks:
    """`size` processes running `command`, one per rank, as a context manager that cleans up after them.

    Args:
        command: the program and its arguments (the same for every rank).
        size: how many ranks.
        env: extra environment for every rank; `rank_env[r]` for rank r alone.
    """

    def __init__(self, command: Sequence[str], size: int, env: Mapping[str, str] | None = None,
                 rank_env: Mapping[int, Mapping[str, str]] | None = None) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="specchat-ring-")
        self.hostfile = write_ring_hostfile(free_ports(size), Path(self._folder.name))
        self.processes: list[subprocess.Popen[str]] = []
        for rank in range(size):
            rank_vars = {**os.environ, **(env or {}), **((rank_env or {}).get(rank, {}))}
            rank_vars.update(MLX_RANK=str(rank), MLX_HOSTFILE=str(self.hostfile))
            self.processes.append(subprocess.Popen(
                list(command), env=rank_vars, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                preexec_fn=partial(pin_to_core, rank),
            ))

    def wait(self, timeout: float) -> list[RankResult]:
        """Every rank's result; a rank still running after `timeout` seconds (from now) is killed."""
        deadline = time.monotonic() + timeout
        results = []
        for rank, process in enumerate(self.processes):
            try:
                out, err = process.communicate(timeout=max(deadline - time.monotonic(), 0.1))
                code: int | None = process.returncode
            except subprocess.TimeoutExpired:
                process.kill()
                out, err = process.communicate()
                code = None
            results.append(RankResult(rank, code, out, err))
        return results

    def close(self) -> None:
        """Kill what still runs (only these processes) and remove the hostfile."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
        self._folder.cleanup()

    def __enter__(self) -> LocalRanks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_ranks(command: Sequence[str], size: int, timeout: float = 120.0, **kwargs: object) -> list[RankResult]:
    """Start `size` ranks of `command` on loopback and return how each ended (see LocalRanks)."""
    with LocalRanks(command, size, **kwargs) as ranks:  # type: ignore[arg-type]  # LocalRanks checks them
        return ranks.wait(timeout)

