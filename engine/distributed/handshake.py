"""What the ranks tell each other before loading any weights: the model, the memory, the head's roll-call port.

One all-gather of a few int32s per rank. From it every rank computes the same layer split, and every rank refuses
a model that differs from the head's (`fingerprint.py`) before the first token, naming the Mac that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx

from ..arrays import int_rows
from ..errors import DistributedError
from .fingerprint import WORDS
from .hostfile import host_label
from .transport import Transport

VERSION = 1  # bumped when the messages change: a Mac running another SpecChat is refused, not misread


@dataclass(frozen=True)
class Statement:
    """One rank's word: its model's fingerprint, its free memory in MB, the head's roll-call port (0 elsewhere)."""

    fingerprint: tuple[int, ...]
    free_mb: int
    port: int = 0
    version: int = VERSION

    def encode(self) -> mx.array:
        return mx.array([self.version, *self.fingerprint, self.free_mb, self.port], dtype=mx.int32)[None]

    @classmethod
    def decode(cls, row: list[int]) -> Statement:
        return cls(tuple(row[1 : 1 + WORDS]), row[1 + WORDS], row[2 + WORDS], row[0])


def exchange(transport: Transport, own: Statement) -> list[Statement]:
    """Every rank's statement, in rank order."""
    return [Statement.decode(row) for row in int_rows(transport.all_gather(own.encode()))]


def check_same_model(statements: list[Statement], model_name: str) -> None:
    """Refuse a session in which some rank runs another SpecChat version or holds another model than the head."""
    head = statements[0]
    versions = [r for r, s in enumerate(statements) if s.version != head.version]
    if versions:
        raise DistributedError(
            f"{_names(versions)} run{'s' if len(versions) == 1 else ''} another version of SpecChat than the head: "
            "install the same version on every Mac."
        )
    others = [r for r, s in enumerate(statements) if s.fingerprint != head.fingerprint]
    if others:
        raise DistributedError(
            f"The model {model_name} on {_names(others)} differs from the head's (its config or weight shapes): put "
            "the same model at the same path on every Mac."
        )


def _names(ranks: list[int]) -> str:
    return " and ".join(host_label(r) for r in ranks)
