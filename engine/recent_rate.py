"""A rate over the last few seconds: a download's speed, an answer's tokens per second.

Both are a running total sampled as it grows; the rate is the total's growth across a trailing window, long
enough to smooth out bursts (speculation emits tokens a round at a time, downloads arrive in chunks) and
short enough to follow a change. The window reaches back to the latest sample at least `window_s` old, so a
rate never comes from a short interval alone: a batch arriving just after the last one (an answer's final
tokens, at a fraction of a token per second) would otherwise read as a spike of a hundred per second.
"""

from __future__ import annotations

from collections import deque


class RecentRate:
    """The growth per second of a running total over the last `window_s` seconds.

    Args:
        window_s: how far back the rate looks at least (once samples go back that far; the two latest always).
    """

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, float]] = deque()

    def add(self, now: float, total: float) -> None:
        """Record the running total at time `now` (monotonic seconds)."""
        self._samples.append((now, total))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self.window_s:
            self._samples.popleft()

    def per_second(self) -> float | None:
        """The total's growth per second across the window; None until time has passed between samples."""
        if not self._samples:
            return None
        (t0, n0), (t1, n1) = self._samples[0], self._samples[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else None
