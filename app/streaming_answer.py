"""The chat answer being generated: where it is saved, what streamed so far, and how its stats line reads.

An answer that ended short of its own end (its token limit, Stop, a crash) can go on (`going_on_from`): the run
starts from the saved text, tokens and rounds, and its own rounds, which the engine numbers from 0, are numbered
after them (`numbered`), so that each token still finds its round's record in the trace.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from engine.conversations import StoredMessage
from engine.events import GenerationResult, PrefillEvent, RoundEvent, TokenEvent


def stopped_before_first_token(result: GenerationResult) -> bool:
    """Stop came before any token: the result's speed and first-token figures are zeros that say nothing."""
    return result.finish_reason == "cancelled" and not result.tokens


@dataclass
class StreamingAnswer:
    """The answer being generated, as saved and shown.

    Attributes:
        request_id: the engine request generating it.
        conversation_id, message_id: where it is saved.
        mode: "speculative" or "standard".
        text: the answer's text so far (a thinking model's reasoning apart, in `reasoning`).
        runs: each token's [text, origin, round] (and its part when not the answer's), to show the coloured view
            again.
        trace: each round's record (RoundEvent.trace_record), to explain and export the speculation.
        stopping: Stop was asked for; the engine ends the answer within a round.
        lenience: above 0, lenient (lossy) acceptance is on for this answer.
        waiting: the worker runs a Local server request first; the answer starts when it is done.
        waited_s: how long it waited for the server's requests (once it started).
        asked_at: when it was asked for (time.perf_counter), to measure the wait.
        reasoning: a thinking model's reasoning so far.
        reasoning_s: how long it has thought (from its first reasoning token to its last; the engine's figure
            once the answer ends).
        prompt_read: (tokens read, of how many) as the prompt's reading last reported; None before it reports.
        earlier: an answer that goes on: its text before this run ("" for a new answer).
        first_round: the number this run's first round takes (the rounds the answer had before it).
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
    reasoning: str = ""
    reasoning_s: float = 0.0
    prompt_read: tuple[int, int] | None = None
    earlier: str = ""
    first_round: int = 0
    _thinking_since: float | None = None

    def going_on_from(self, cut: StoredMessage | None) -> StreamingAnswer:
        """This answer, going on from the saved one that ended short (itself for None)."""
        if cut is not None:
            self.text = self.earlier = cut.content
            self.runs, self.trace = [list(run) for run in cut.runs], list(cut.trace)
            self.reasoning, self.reasoning_s = cut.reasoning, cut.reasoning_s
            self.first_round = 1 + max([record["round"] for record in cut.trace] + [run[2] for run in cut.runs], default=-1)
        return self

    def numbered(self, events: list[object]) -> list[object]:
        """The engine's events with their rounds numbered from `first_round`."""
        if not self.first_round:
            return events
        return [replace(e, round=e.round + self.first_round) if isinstance(e, (TokenEvent, RoundEvent)) else e for e in events]

    def add_events(self, events: list[object]) -> list[TokenEvent]:
        """A batch of the engine's events: how far the prompt's reading got, and the tokens (returned)."""
        for event in events:
            if isinstance(event, PrefillEvent):
                self.prompt_read = (event.processed, event.total)
        tokens = [e for e in events if isinstance(e, TokenEvent)]
        self.add_tokens(tokens)
        return tokens

    def add_tokens(self, tokens: list[TokenEvent]) -> None:
        """Streamed tokens: each to its part's text, all to the runs (markers too: they count in their rounds)."""
        for token in tokens:
            if token.reasoning:
                self.reasoning += token.text
            elif token.part == "answer":
                self.text += token.text
        self.runs += [[t.text, t.origin, t.round] + ([t.part] if t.part != "answer" else []) for t in tokens]
        if any(token.reasoning for token in tokens):
            now = time.perf_counter()
            self._thinking_since = self._thinking_since or now
            self.reasoning_s = now - self._thinking_since

    def take_result(self, result: GenerationResult) -> None:
        """The engine's final texts: what the detokenizer released only at the end joins the last answer token."""
        streamed = self.text[len(self.earlier):]
        tail = result.text[len(streamed):] if result.text.startswith(streamed) else ""
        last_answer_run = next((run for run in reversed(self.runs) if len(run) == 3), None)
        if tail and last_answer_run is not None:
            last_answer_run[0] += tail
        self.text = self.earlier + result.text
        if result.reasoning or not self.earlier:  # an answer that goes on keeps the reasoning it began with
            self.reasoning, self.reasoning_s = result.reasoning, result.stats.thinking.seconds

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
        """The stats line: the engine's summary, the wait for the server, and whether Stop ended it; an answer stopped
        before its first token says how far the message's reading got (its figures, all zero, said nothing true)."""
        if stopped_before_first_token(result):
            return "Stopped before the first token" + (self._read_note() or "") + "."
        went_on = "Went on: " if self.earlier else ""  # the figures are this run's, not the whole answer's
        return went_on + result.summary() + self.wait_note() + (" (stopped)" if result.finish_reason == "cancelled" else "")

    def _read_note(self) -> str | None:
        """", while reading your message (2,050 of 5,006 tokens read)", when the reading stopped short."""
        if self.prompt_read is None or self.prompt_read[0] >= self.prompt_read[1]:
            return None
        read, total = self.prompt_read
        return f", while reading your message ({read:,} of {total:,} tokens read)"
