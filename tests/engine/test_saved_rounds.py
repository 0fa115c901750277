"""A saved answer's trace reads back as the rounds it was written from."""

from __future__ import annotations

import json

from engine.conversations import StoredMessage
from engine.decoding.generation import generate_stream
from engine.events import RoundEvent, trace_line
from engine.params import GenerationParams
from engine.saved_rounds import ended_on_end_token, last_answer, saved_round, saved_rounds


def test_each_round_of_a_speculative_answer_reads_back_as_it_was(tiny_pair) -> None:
    events = generate_stream(tiny_pair, "Once upon a time", GenerationParams(max_tokens=24, drafter="model", temperature=0.0))
    rounds = [event for event in events if isinstance(event, RoundEvent)]
    assert rounds and any(r.drafted for r in rounds)
    saved = [json.loads(trace_line(r.trace_record())) for r in rounds]  # through JSON, as a chat keeps it
    assert saved_rounds(saved) == rounds


def test_a_record_of_an_older_version_reads_with_the_newer_fields_at_their_defaults() -> None:
    old = {"round": 3, "verified": 4, "accepted": 2, "emitted": 3, "drafter": "model", "draft_s": 0.01, "verify_s": 0.02}
    assert saved_round(old) == RoundEvent(3, 4, 2, 3, "model", 0.01, 0.02)


def test_the_last_answer_of_a_thread_is_its_last_assistant_message() -> None:
    thread = [StoredMessage(1, "user", "Hi"), StoredMessage(2, "assistant", "Hello"), StoredMessage(3, "user", "And?")]
    assert last_answer(thread) is thread[1] and last_answer(thread[:1]) is None


def test_an_answer_ended_on_an_end_token_when_it_stopped_short_of_its_last_round() -> None:
    """Its pass produced the end token, which `GenerationStats.tokens_per_pass` counts and the trace does not keep."""
    short = [RoundEvent(0, 3, 3, 4, "model", 0.0, 0.0), RoundEvent(1, 3, 1, 1, "model", 0.0, 0.0)]  # kept 1 of 2
    whole = [RoundEvent(0, 3, 3, 4, "model", 0.0, 0.0), RoundEvent(1, 0, 0, 1, "none", 0.0, 0.0)]
    stopped, cut = StoredMessage(2, "assistant", "Hello", finish="stop"), StoredMessage(2, "assistant", "Hello", finish="length")
    assert ended_on_end_token(stopped, short)
    assert not ended_on_end_token(cut, short) and not ended_on_end_token(stopped, whole) and not ended_on_end_token(stopped, [])
