"""How long a wait has left, in words: a download's, a GGUF import's.

Both know what is done, the total and a recent rate (`recent_rate.py`); the time left is what remains at that
rate, said in seconds, minutes or hours as a person reads it ("1 min 29 s").
"""

from __future__ import annotations


def seconds_left(done: float, total: float, per_second: float | None) -> float | None:
    """What remains at the recent rate; None while there is no rate to go by."""
    if not per_second or per_second <= 0:
        return None
    return max(0.0, total - done) / per_second


def duration_text(seconds: float) -> str:
    """'45 s', '1 min 29 s', '2 h 5 min'."""
    seconds = int(seconds + 0.5)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    return f"{minutes // 60} h {minutes % 60} min"
