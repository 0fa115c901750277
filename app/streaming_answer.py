"""The chat answer being generated: where it is saved, what streamed so far, and how its stats line reads."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from engine.events import GenerationResult


@dataclass
class StreamingAnswer:
    """The answer being generated, as saved and shown.

    Attributes:
        request_id: the engine request generating it.
        conversation_id, message_id: where it is saved.
        mode: "speculative" or "standard".
        text: the text so far.
        runs: each token's [text, origin, round], to show the coloured view again.
        trace: each round's record (RoundEvent.trace_record), to explain and export the speculation.
        stopping: Stop was asked for; the engine ends the answer within a round.
        lenience: above 0, lenient (lossy) acceptance is on for this answer.
        waiting: the worker runs a Local server request first; the answer starts when it is done.
        waited_s: how long it waited for the server's requests (once it started).
        asked_at: when it was asked for (time.perf_counter), to measure the wait.
    """

    request_id: int
    conversation_id: int
    message_id: int
    mode: str
    text: str = ""
    runs: list[list] = field(default_factory=list)
    trace: list[dict] = field(default_factory=list)
    stopping: bool = False
    lenience: float = 0.0
    waiting: bool = False
    waited_s: float = 0.0
    asked_at: float = field(default_factory=time.perf_counter)

    def start_running(self) -> None:
        """The worker took the answer up: the wait (if it waited) ends here."""
        if self.waiting:
            self.waiting = False
            self.waited_s = time.perf_counter() - self.asked_at

    def wait_note(self, short: bool = False) -> str:
        """What the first-token figures add when the answer waited: the wait, which they leave out (`short`: for the
        side panel's narrow column)."""
        if not self.waited_s:
            return ""
        return f" + {self.waited_s:.2f} s waiting" if short else f" (after waiting {self.waited_s:.2f} s for a server request)"

    def summary(self, result: GenerationResult) -> str:
        """The stats line: the engine's summary, the wait for the server, and whether Stop ended it."""
        return result.summary() + self.wait_note() + (" (stopped)" if result.finish_reason == "cancelled" else "")
