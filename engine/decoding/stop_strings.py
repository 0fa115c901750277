"""Ending generation on stop strings without ever showing part of one.

Token events stream out as they are generated, but a stop string can span several tokens. So events whose text
could still be the beginning of a stop string are held back until the text proves otherwise; when a stop string
completes, the held events before it are released (the one it starts in cut short) and generation ends.
"""

from __future__ import annotations

import dataclasses

from ..events import TokenEvent


class StopStrings:
    """Filters a stream of token events for stop strings.

    Attributes:
        stopped: whether a stop string has been seen (no more events should be pushed).
        matched: the stop string that ended the text (Anthropic's API reports it as `stop_sequence`).
    """

    def __init__(self, stops: tuple[str, ...]) -> None:
        self.stops = tuple(s for s in stops if s)
        self.stopped = False
        self.matched: str | None = None
        self._held: list[TokenEvent] = []

    def push(self, event: TokenEvent) -> list[TokenEvent]:
        """Take one event; return the events that can be shown now."""
        if not self.stops:
            return [event]
        self._held.append(event)
        text = "".join(e.text for e in self._held)
        found = [(at, stop) for stop in self.stops if (at := text.find(stop)) >= 0]
        if found:
            cut, self.matched = min(found)
            self.stopped = True
            return self._release_before(cut)
        keep = self._longest_partial_stop(text)
        return self._release_before(len(text) - keep, hold_rest=True)

    def flush(self) -> list[TokenEvent]:
        """At the end of generation: release whatever is held (no stop string completed)."""
        held, self._held = self._held, []
        return held if not self.stopped else []

    def _longest_partial_stop(self, text: str) -> int:
        """Length of the longest suffix of `text` that is a proper prefix of some stop string."""
        best = 0
        for stop in self.stops:
            for n in range(min(len(stop) - 1, len(text)), best, -1):
                if text.endswith(stop[:n]):
                    best = n
                    break
        return best

    def _release_before(self, cut: int, hold_rest: bool = False) -> list[TokenEvent]:
        """Release the events wholly before character `cut`; the event straddling it is cut short when
        stopping, or held (with everything after) while a stop string may still complete."""
        released: list[TokenEvent] = []
        position = 0
        for index, event in enumerate(self._held):
            end = position + len(event.text)
            if end <= cut:
                released.append(event)
                position = end
                continue
            if hold_rest:
                self._held = self._held[index:]
                return released
            if cut > position:
                released.append(dataclasses.replace(event, text=event.text[: cut - position]))
            break
        self._held = []
        return released
