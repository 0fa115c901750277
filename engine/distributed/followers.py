"""The other Macs of a pipeline whose head is already running (the app): started as mlx.launch starts ranks, and
waited for before the head joins the ring.

`mlx.launch` starts every rank, the head's included; the app is the head already, so it starts the others itself
the way mlx.launch does: ssh for a remote host (in batch mode: there is no terminal to type a password in), a plain
shell for 127.0.0.1, the ring's hostfile written on each host, `MLX_RANK` set, in the head's working directory,
`python -m engine.distributed.follow TARGET`. MLX's join holds Python's lock while it waits for its peers (the
window would freeze), so every rank checks in first: one line to a socket the head opens, sent just before it
joins. The head joins once all have; a Mac whose SpecChat ends before checking in is named with its last line of
output, one that stays silent after `timeout` seconds too.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import IO

from ..errors import DistributedError
from .hostfile import LOOPBACK, NAMES_ENV, Host, host_label

CHECK_IN_ENV = "SPECCHAT_CHECK_IN"  # "ip:port" of the head's check-in socket
PASSED_ENV = ("SPECCHAT_PIPELINE_HOP_DELAY_MS", "SPECCHAT_JOIN_TIMEOUT_S", "SPECCHAT_HOME", "SPECCHAT_SHARD_MEMORY_GB")
STOP_WAIT_S = 10.0


def ring_hostfile(hosts: Sequence[Host], first_port: int) -> list[list[str]]:
    """The ring's hostfile for `hosts` (MLX_HOSTFILE's format): each host's first IP, ports counting up, as
    mlx.launch writes it."""
    return [[f"{host.ips[0]}:{first_port + rank}"] for rank, host in enumerate(hosts)]


def follow_command(target: str) -> list[str]:
    """What a follower runs (the same interpreter and SpecChat as the head, at the same paths)."""
    return [sys.executable, "-m", "engine.distributed.follow", target]


def follower_script(rank: int, ring: list[list[str]], names: str, check_in: str, command: Sequence[str]) -> str:
    """The shell line that runs rank `rank` on its host: the ring's hostfile in a temporary file (removed after),
    the environment, then `command` (`follow_command`) in the head's folder."""
    passed = "".join(f"export {key}={shlex.quote(os.environ[key])}; " for key in PASSED_ENV if key in os.environ)
    return (f"cd {shlex.quote(os.getcwd())} 2>/dev/null; f=$(mktemp); echo {shlex.quote(json.dumps(ring))} > $f; "
            f"{passed}export MLX_HOSTFILE=$f MLX_RANK={rank} {NAMES_ENV}={shlex.quote(names)} "
            f"{CHECK_IN_ENV}={shlex.quote(check_in)}; {shlex.join(command)}; code=$?; rm -f $f; exit $code")


class _Output:
    """The last lines a follower wrote (what to quote when it fails to start)."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: deque[str] = deque(maxlen=20)
        threading.Thread(target=self._read, args=(stream,), daemon=True, name="follower-output").start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            if line.strip() and not line.lstrip().startswith("[ring]"):
                self.lines.append(line.strip())

    def last(self) -> str:
        errors = [line for line in self.lines if line.startswith("error:")]
        return (errors or list(self.lines) or ["it wrote nothing"])[-1]


class Followers:
    """Ranks 1..N-1, started for a head that runs already (rank 0, this process).

    Args:
        hosts: the user's hostfile (the first host is this Mac, the head; MLX_HOSTFILE names the ring already, so
            that messages name each Mac as the ranks do).
        ring: the ring's hostfile.
        target: the model every rank loads its layers of.
        timeout: how long every rank has to check in.

    Attributes:
        pids: each rank's process id on its host, as it checked in (for tests on one machine).
    """

    def __init__(self, hosts: Sequence[Host], ring: list[list[str]], target: str, timeout: float) -> None:
        self.hosts = list(hosts)
        self.timeout = timeout
        self.pids: dict[int, int] = {}
        self._listener = socket.create_server((hosts[0].ips[0], 0))
        check_in = f"{hosts[0].ips[0]}:{self._listener.getsockname()[1]}"
        names = ",".join(host.ssh for host in hosts)
        self.processes: dict[int, subprocess.Popen[str]] = {}
        self._output: dict[int, _Output] = {}
        for rank in range(1, len(hosts)):
            script = follower_script(rank, ring, names, check_in, follow_command(target))
            self._start(rank, script)

    def _start(self, rank: int, script: str) -> None:
        host = self.hosts[rank]
        command = ["bash", "-c", script] if host.ips[0] == LOOPBACK else ["ssh", "-o", "BatchMode=yes", host.ssh, script]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True)
        assert process.stderr is not None
        self.processes[rank] = process
        self._output[rank] = _Output(process.stderr)

    def wait_for_check_in(self) -> None:
        """Return once every rank has checked in; one line naming the Mac that ended or stayed silent otherwise."""
        deadline = time.monotonic() + self.timeout
        try:
            while len(self.pids) < len(self.processes):
                self._refuse_ended()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DistributedError(f"No word from {self._silent()} within {self.timeout:.0f} s: check that each Mac "
                                           "is on, reachable by ssh without a password, and has SpecChat and the model at "
                                           "the same paths as this one.")
                ready, _, _ = select.select([self._listener], [], [], min(left, 0.2))
                if ready:
                    self._take_check_in()
        finally:
            self._listener.close()

    def _take_check_in(self) -> None:
        sock, _ = self._listener.accept()
        with sock:
            sock.settimeout(5)
            rank, pid = (int(word) for word in sock.recv(64).decode().split())
        self.pids[rank] = pid

    def _refuse_ended(self) -> None:
        for rank, process in self.processes.items():
            if rank not in self.pids and process.poll() is not None:
                time.sleep(0.1)  # its last line may still be in the pipe
                raise DistributedError(f"SpecChat did not start on {host_label(rank)}: {self._output[rank].last()}")

    def _silent(self) -> str:
        return " and ".join(host_label(rank) for rank in self.processes if rank not in self.pids)

    def close(self, wait_s: float = STOP_WAIT_S) -> None:
        """Wait up to `wait_s` for the ranks to leave (the head's session said STOP, or went away); end what still
        runs (each started in a session of its own: its shell and SpecChat)."""
        deadline = time.monotonic() + wait_s
        for process in self.processes.values():
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                _kill_group(process)


def _kill_group(process: subprocess.Popen[str]) -> None:
    """End a follower's shell and everything it started (its own process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def check_in(rank: int) -> None:
    """A follower's word to the head, just before it joins the ring (see the module docstring)."""
    address = os.environ.get(CHECK_IN_ENV)
    if not address:
        return
    ip, port = address.rsplit(":", 1)
    with socket.create_connection((ip, int(port)), timeout=30) as sock:
        sock.sendall(f"{rank} {os.getpid()}\n".encode())
