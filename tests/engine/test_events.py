"""The event types' own arithmetic: per-part speculation read back from a saved answer's rounds."""

from __future__ import annotations

from engine.events import GenerationResult, GenerationStats, PolicyBelief, RoundEvent, split_rounds


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


def _result(mode: str, drafter: str, **drafted_by: int) -> GenerationResult:
    stats = GenerationStats(generated_tokens=8, rounds=4, drafted=sum(drafted_by.values()), accepted=4, generation_s=1.0)
    stats.drafted_by.update(drafted_by)
    return GenerationResult("", [1] * 8, ["accepted"] * 8, mode, "length", stats, drafter=drafter)  # type: ignore[arg-type]  # strings for Literals


def test_the_stats_line_names_the_drafter_that_drafted() -> None:
    """It used to read the same whichever drafter ran ("50% of 8 drafted tokens accepted"): an MTP answer and a
    draft model's could not be told apart."""
    assert "50% of 8 drafted tokens accepted (built-in MTP drafter)" in _result("speculative", "mtp", mtp=8).summary()
    assert "(EAGLE-3 drafter)" in _result("speculative", "eagle3", eagle3=8).summary()
    assert "(dflash-2)" in _result("speculative", "dflash-2", **{"dflash-2": 8}).summary()  # a new name as it is
    mixed = _result("speculative", "model+lookup", lookup=6, model=2).summary()
    assert "accepted (lookup drafted 75%, draft model 25%)" in mixed  # shares, not acceptance rates


def test_an_answer_that_drafted_nothing_names_the_drafter_asked_for() -> None:
    assert "no tokens drafted by the built-in MTP drafter" in _result("speculative", "mtp").summary()
    assert "standard decoding" in _result("standard", "none").summary()
    assert _result("speculative", "mtp", mtp=8).as_dict()["drafter"] == "mtp"


def test_an_automatic_answer_that_drafted_nothing_reads_as_a_sentence() -> None:
    """It read "no tokens drafted by the Automatic, Automatic: standard decoding (...)": Automatic is a choice among
    drafters, not a drafter, and its reason already says what it chose."""
    silent = _result("speculative", "auto")
    assert "no tokens drafted under Automatic," in silent.summary()
    silent.stats.policy = [PolicyBelief("auto", 0.0, None, [1.0], 0, "standard decoding (no drafter had a draft to offer)", None, 0)]
    line = silent.summary()
    assert "no tokens drafted, Automatic from here: standard decoding (no drafter had a draft to offer)" in line
    assert "by the Automatic" not in line
    # A walk read "no tokens drafted, Automatic: lookup (predicted 1.5 tokens a pass ...)" as a contradiction: the
    # prediction is for the answers that follow (lookup found nothing to copy in this one).
    silent.stats.policy[0].reason = "lookup (predicted 1.5 tokens a pass drafting 1 a round, 1.21x as fast as without drafting)"
    assert "no tokens drafted, Automatic from here: lookup (predicted" in silent.summary()
