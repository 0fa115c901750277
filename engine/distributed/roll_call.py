"""Which Mac stopped: a small TCP connection from every rank to the head, carrying nothing but goodbyes.

MLX's ring backend reports a lost peer as "[ring] connection to a peer was lost", naming no one, and a rank two
hops away sees only its neighbour leave. So every rank also keeps one connection to the head and says why it
leaves: "bye" at the end of a session, "lost" when its own ring connection broke (a victim, not the cause), or
"error <line>" when it failed itself. A rank that was killed or crashed says nothing: its connection just
closes. On a ring failure the head reads these notes and names the Mac that ended without one, or the one that
reported its own error.

The workers also watch their connection to the head: when the head is gone, they leave rather than wait, quietly
when the head said "quit" (it reports its own error), with a line naming the head when it vanished.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from dataclasses import dataclass

from ..errors import DistributedError
from .hostfile import host_label
from .ring_noise import urgent

SETTLE_S = 5.0  # how long the head waits for the other ranks' notes after a ring failure
ACCEPT_S = 120.0  # how long the head waits for every rank to report in (they load their layers first)


@dataclass
class _Peer:
    rank: int
    sock: socket.socket
    note: str | None = None
    closed: bool = False


class HeadRollCall:
    """The head's end: a listening socket, then one connection per rank."""

    def __init__(self, address: str) -> None:
        self._listener = socket.create_server((address, 0))
        self.port = self._listener.getsockname()[1]
        self._peers: list[_Peer] = []

    def gather(self, size: int, timeout: float = ACCEPT_S) -> None:
        """Accept ranks 1..size-1, each announcing its rank."""
        self._listener.settimeout(timeout)
        try:
            while len(self._peers) < size - 1:
                sock, _ = self._listener.accept()
                line = _read_line(sock, timeout)
                self._peers.append(_Peer(int(line), sock))
        except (OSError, ValueError) as e:
            heard = {p.rank for p in self._peers}
            silent = ", ".join(host_label(r) for r in range(1, size) if r not in heard)
            raise DistributedError(f"No word from {silent} after loading: check that SpecChat runs there, then start again.") from e
        finally:
            self._listener.close()

    def explain(self, error: RuntimeError) -> DistributedError:
        """The one-line error for a ring failure: which Mac stopped, and what to do."""
        self._settle(SETTLE_S)
        failed = [(p.rank, p.note) for p in self._peers if p.note and p.note.startswith("error ")]
        if failed:
            rank, note = failed[0]
            return DistributedError(f"The Mac {host_label(rank)} failed: {note[6:]}")
        ended = [p for p in self._peers if p.closed and not p.note]
        if ended:
            names = " and ".join(host_label(p.rank) for p in ended)
            return DistributedError(
                f"Lost the Mac {names} mid-answer: its SpecChat process ended (killed, crashed or out of memory). "
                "Check it, then start again."
            )
        silent = [p for p in self._peers if not p.closed]
        names = " and ".join(host_label(p.rank) for p in silent) or "the other Macs"
        return DistributedError(f"Lost the connection to {names} ({error}). Check the network cable, then start again.")

    def _settle(self, seconds: float) -> None:
        """Read every peer's note or end of stream, for up to `seconds`."""
        deadline = time.monotonic() + seconds
        while any(not p.closed for p in self._peers) and time.monotonic() < deadline:
            open_peers = {p.sock: p for p in self._peers if not p.closed}
            ready, _, _ = select.select(list(open_peers), [], [], max(deadline - time.monotonic(), 0))
            for sock in ready:
                peer = open_peers[sock]
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if data:
                    peer.note = (peer.note or "") + data.decode(errors="replace").strip()
                else:
                    peer.closed = True

    def dismiss(self) -> None:
        """The head leaves on an error it reports itself: the ranks still there leave quietly (one line, the head's)."""
        for peer in self._peers:
            try:
                peer.sock.sendall(b"quit\n")
                peer.sock.close()
            except OSError:
                pass

    def close(self) -> None:
        """After the session's STOP: wait for every rank's goodbye (closing first would look like the head
        leaving), then close."""
        self._settle(SETTLE_S)
        for peer in self._peers:
            peer.sock.close()


class WorkerRollCall:
    """A worker's end: one connection to the head, for its goodbye; the head's leaving ends this process."""

    def __init__(self, address: str, port: int, rank: int) -> None:
        self._sock = socket.create_connection((address, port), timeout=ACCEPT_S)
        self._sock.settimeout(None)
        self._sock.sendall(f"{rank}\n".encode())
        self._leaving = False

    def watch_head(self) -> None:
        """Exit this process when the head's end closes without a goodbye from us (the head is gone)."""
        threading.Thread(target=self._watch, daemon=True, name="watch-head").start()

    def _watch(self) -> None:
        try:
            word = self._sock.recv(16)
        except OSError:
            word = b""
        if self._leaving:
            return
        if not word.startswith(b"quit"):  # the head is gone without a word: it crashed or was killed
            urgent(f"error: lost the head, {host_label(0)}: it stopped. Start again from the head.")
        os._exit(1)

    def say(self, note: str) -> None:
        """Tell the head why this rank leaves ("bye", "lost" or "error <line>")."""
        self._leaving = True
        try:
            self._sock.sendall((note.replace("\n", " ") + "\n").encode())
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the watcher's recv
            self._sock.close()
        except OSError:
            pass


def _read_line(sock: socket.socket, timeout: float) -> str:
    sock.settimeout(timeout)
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(64)
        if not chunk:
            break
        data += chunk
    sock.settimeout(None)
    return data.decode().strip()
