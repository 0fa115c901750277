"""The event types' own arithmetic: per-part speculation read back from a saved answer's rounds."""

from __future__ import annotations

from engine.events import RoundEvent, split_rounds


def round_record(index: int, drafted: int, accepted: int, reasoning: bool) -> dict:
    emitted = accepted + 1
    return RoundEvent(index, drafted, accepted, emitted, "model", 0.0, 0.0, reasoning=reasoning).trace_record()


def test_acceptance_while_thinking_and_while_answering_is_computed_from_the_rounds() -> None:
    records = [round_record(0, 4, 4, True), round_record(1, 4, 1, True), round_record(2, 4, 3, False),
               round_record(3, 0, 0, False)]
    thinking, answering = split_rounds(records)
    assert (thinking.rounds, thinking.drafted, thinking.accepted, thinking.emitted) == (2, 8, 5, 7)
    assert (answering.rounds, answering.drafted, answering.accepted, answering.emitted) == (2, 4, 3, 5)
    assert thinking.acceptance_rate == 5 / 8 and answering.tokens_per_pass == 2.5
    assert thinking.speculation() == "62% of 8 drafted accepted, 3.5 tokens per pass"


def test_rounds_saved_before_reasoning_was_known_count_as_the_answers() -> None:
    record = round_record(0, 2, 1, False)
    del record["reasoning"]
    thinking, answering = split_rounds([record])
    assert thinking.rounds == 0 and answering.drafted == 2
