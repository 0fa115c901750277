"""The head never waits forever: a collective that has not finished within `limit` seconds ends the process.

A Mac that dies closes its connections and the ring reports it at once (roll_call.py names it). A Mac that is
cut off (a cable pulled, asleep, frozen) closes nothing, and the ring's receive would spin for ever. The head's
transport marks when each collective starts and ends; this thread checks once a second and, past the limit,
writes one line naming the other Macs and ends the process (the blocked receive cannot be interrupted).
The other ranks need no watchdog: they wait for the head's next message as long as the user takes to ask, and
leave when the head's roll-call connection closes.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from .ring_noise import urgent

LIMIT_S = float(os.environ.get("SPECCHAT_PIPELINE_TIMEOUT_S") or 120)


class Watchdog:
    """Ends this process with `message()` when a collective runs longer than `limit` seconds."""

    def __init__(self, message: Callable[[float], str], limit: float = LIMIT_S) -> None:
        self.limit = limit
        self._message = message
        self._since: float | None = None
        threading.Thread(target=self._watch, daemon=True, name="pipeline-watchdog").start()

    def begin(self) -> None:
        self._since = time.monotonic()

    def end(self) -> None:
        self._since = None

    def _watch(self) -> None:
        while True:
            time.sleep(min(1.0, self.limit / 4))
            since = self._since
            if since is not None and time.monotonic() - since > self.limit:
                urgent(f"error: {self._message(self.limit)}")
                os._exit(1)
