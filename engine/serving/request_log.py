"""A line in the server's log per request: its path, status, tokens and speed, and what it left out or how it ended
(the CLI prints it to stderr, the app's Local server window shows it)."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class RequestRecord:
    """One finished request, for the log (the CLI's stderr, the app's server log)."""

    path: str
    status: int
    tokens: int = 0
    tokens_per_pass: float = 0.0
    tokens_per_s: float = 0.0
    note: str = ""

    def line(self) -> str:
        """E.g. '14:02:11 POST /v1/chat/completions 200 52 tokens, 3.1/pass, 40.2 tok/s speculative'."""
        detail = f"{self.tokens} tokens, {self.tokens_per_pass:.1f}/pass, {self.tokens_per_s:.1f} tok/s" if self.tokens else ""
        return " ".join(part for part in (time.strftime("%H:%M:%S"), f"POST {self.path}", str(self.status), detail, self.note) if part)
