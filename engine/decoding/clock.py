"""The clock every time an answer measures reads: each verify pass, each draft, the wait for the first token.

The adaptive policy and Automatic choose from these measured costs, so the same prompt on a machine busy with other
work can be drafted by another drafter. That is right for a user (what pays is what is fast on their machine now),
but a test that checks a choice must not depend on the load: it replaces `now` with a clock of its own (the
`ticking_clock` fixture of tests/conftest.py, one millisecond at each reading). Nothing else in the engine reads
the time for an answer.
"""

from __future__ import annotations

import time


def now() -> float:
    """Seconds on a monotonic clock; only the difference between two readings means anything."""
    return time.perf_counter()
