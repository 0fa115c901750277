"""A pytest plugin that runs the engine's clock at a random rate, to find the tests whose outcome depends on the
machine's load (`-p tests.jittery_clock`; docs/development.md).

Every cost an answer measures reads `engine/decoding/clock.now`. Here each reading advances by the real time since
the last one times 0.2, 0.5, 1, 2 or 5, drawn afresh: a busier or idler machine than any run will meet. A test that
fails under it chooses from measured costs without the `ticking_clock` fixture, or waits on a time.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest

RATES = (0.2, 0.5, 1.0, 2.0, 5.0)


def jittery(rng: random.Random) -> Callable[[], float]:
    """A monotonic clock whose every step is the real step at a rate drawn from RATES."""
    last_real, reading = time.perf_counter(), 0.0

    def now() -> float:
        nonlocal last_real, reading
        real = time.perf_counter()
        reading += (real - last_real) * rng.choice(RATES)
        last_real = real
        return reading

    return now


@pytest.fixture(autouse=True)
def jittery_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.decoding import clock

    monkeypatch.setattr(clock, "now", jittery(random.Random()))
