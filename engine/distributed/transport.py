"""The collectives of the pipeline, each evaluated where it is issued, with an optional emulated hop delay.

MLX builds collectives lazily like any op. A rank that leaves a receive unevaluated (a pass whose output it never
reads) leaves the peer's bytes in the socket, and the next collective reads them as its own; a rank that leaves
a send unevaluated deadlocks the receiver. Evaluating each collective at the point it is issued makes every
rank run them in program order, which is the same order on every rank by construction (the head's message,
then the pipeline's hops from the first stage to the last).

`hop_delay_s` sleeps before every hop a rank originates (each send, and the head's message): a test hook that
emulates a network's latency on loopback, where `tc netem` needs privileges.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import mlx.core as mx

from ..errors import SpecChatError
from .watchdog import Watchdog

HOP_DELAY_ENV = "SPECCHAT_PIPELINE_HOP_DELAY_MS"

Explain = Callable[[RuntimeError], SpecChatError]


def hop_delay_from_env() -> float:
    """The emulated per-hop delay in seconds (`SPECCHAT_PIPELINE_HOP_DELAY_MS`, 0 when unset)."""
    return float(os.environ.get(HOP_DELAY_ENV) or 0) / 1000


class Transport:
    """This rank's end of the ring.

    Args:
        group: the MLX distributed group.
        explain: turns the ring's RuntimeError ("connection to a peer was lost") into a one-line error that names
            the host (`roll_call.py`).
        hop_delay_s: emulated latency added before each hop this rank originates.

    Attributes:
        hops: hops this rank originated (the benchmark's count).
        seconds: time spent inside collectives (waiting included) and in the emulated hop delay: the network's
            time, as the head's rounds report it (`RoundEvent.network_s`).
        watchdog: ends the process when a collective hangs (the head's; see watchdog.py).
    """

    def __init__(self, group: mx.distributed.Group, explain: Explain | None = None, hop_delay_s: float = 0.0) -> None:
        self.group = group
        self.rank = group.rank()
        self.size = group.size()
        self.explain = explain
        self.hop_delay_s = hop_delay_s
        self.hops = 0
        self.seconds = 0.0
        self.broken = False  # a collective failed: the ring cannot carry another
        self.failure: SpecChatError | None = None  # what it failed with, explained
        self.watchdog: Watchdog | None = None

    def all_sum(self, x: mx.array, originates: bool = False) -> mx.array:
        """The sum of `x` over all ranks (a broadcast when one rank gives values and the others zeros)."""
        if originates:
            self._hop()
        return self._run(mx.distributed.all_sum(x, group=self.group))

    def all_gather(self, x: mx.array) -> mx.array:
        """Every rank's `x`, stacked along the first axis in rank order."""
        return self._run(mx.distributed.all_gather(x, group=self.group))

    def send(self, x: mx.array, dst: int) -> mx.array:
        self._hop()
        return self._run(mx.distributed.send(x, dst, group=self.group))

    def recv_like(self, x: mx.array, src: int) -> mx.array:
        return self._run(mx.distributed.recv_like(x, src, group=self.group))

    def _hop(self) -> None:
        self.hops += 1
        if self.hop_delay_s:
            start = time.perf_counter()
            time.sleep(self.hop_delay_s)
            self.seconds += time.perf_counter() - start

    def _run(self, out: mx.array) -> mx.array:
        start = time.perf_counter()
        if self.watchdog:
            self.watchdog.begin()
        try:
            mx.eval(out)
        except RuntimeError as e:
            self.broken = True
            if self.explain is None:
                raise
            self.failure = self.explain(e)
            raise self.failure from None
        finally:
            if self.watchdog:
                self.watchdog.end()
            self.seconds += time.perf_counter() - start
        return out
