"""The answer being generated: its stats line, which says how far the message's reading got when Stop came first."""

from __future__ import annotations

from app.streaming_answer import StreamingAnswer
from engine.events import GenerationResult, GenerationStats, PrefillEvent

STOPPED_EMPTY = GenerationResult("", [], [], "speculative", "cancelled", GenerationStats(prompt_tokens=5006))


def test_stopped_while_reading_the_message_says_how_far_the_reading_got() -> None:
    """It read "0.0 tok/s, ... 0 tokens, first after 0.00 s (stopped)": figures of an answer that never began."""
    answer = StreamingAnswer(1, 1, 1, "speculative")
    answer.add_events([PrefillEvent(512, 5006), PrefillEvent(2050, 5006)])
    assert answer.summary(STOPPED_EMPTY) == "Stopped before the first token, while reading your message (2,050 of 5,006 tokens read)."


def test_stopped_after_the_reading_or_before_it_reported_says_only_that() -> None:
    read = StreamingAnswer(1, 1, 1, "speculative")
    read.add_events([PrefillEvent(5006, 5006)])
    assert read.summary(STOPPED_EMPTY) == StreamingAnswer(1, 1, 1, "speculative").summary(STOPPED_EMPTY) == "Stopped before the first token."


def test_a_stopped_answer_with_tokens_keeps_its_figures() -> None:
    stats = GenerationStats(prompt_tokens=10, generated_tokens=3, rounds=3)
    summary = StreamingAnswer(1, 1, 1, "standard").summary(GenerationResult("Hi", [1, 2, 3], ["target"] * 3, "standard", "cancelled", stats))
    assert summary.endswith("(stopped)") and "3 tokens" in summary
