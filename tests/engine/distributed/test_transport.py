"""The transport: collectives evaluated where issued, hops counted and delayed, ring failures explained once."""

from __future__ import annotations

import mlx.core as mx
import pytest

from engine.distributed import transport as transport_module
from engine.distributed.transport import HOP_DELAY_ENV, Transport, hop_delay_from_env
from engine.errors import DistributedError


def test_the_hop_delay_comes_from_the_environment_in_milliseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HOP_DELAY_ENV, raising=False)
    assert hop_delay_from_env() == 0
    monkeypatch.setenv(HOP_DELAY_ENV, "2.5")
    assert hop_delay_from_env() == 0.0025


def test_a_broadcast_is_one_hop_and_is_evaluated_at_once() -> None:
    transport = Transport(mx.distributed.init())  # a group of one: the sum is the array itself
    out = transport.all_sum(mx.array([1, 2], dtype=mx.int32), originates=True)
    assert out.tolist() == [1, 2] and transport.hops == 1
    transport.all_sum(mx.array([3]))
    assert transport.hops == 1


def test_a_ring_failure_becomes_the_explained_error_and_marks_the_ring_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    def lost(*arrays: object) -> None:
        raise RuntimeError("[ring] connection to a peer was lost")

    transport = Transport(mx.distributed.init(), explain=lambda e: DistributedError(f"named: {e}"))
    monkeypatch.setattr(transport_module.mx, "eval", lost)
    with pytest.raises(DistributedError, match=r"^named: \[ring\] connection to a peer was lost$"):
        transport.all_sum(mx.array([1]))
    assert transport.broken


def test_the_emulated_hop_delay_counts_as_network_time() -> None:
    transport = Transport(mx.distributed.init(), hop_delay_s=0.02)
    transport.all_sum(mx.array([1]), originates=True)
    assert transport.seconds >= 0.02  # sleep never returns early: the delay is in, whatever else the sum took
