"""Compare's sides: standard decoding or any drafter, the same settings on both, and the line that compares them."""

from __future__ import annotations

import pytest

from engine.comparison import check_sides, compared_params, side_label, side_params, sides, verdict
from engine.drafter_kinds import names
from engine.errors import InvalidParameterError
from engine.events import GenerationResult, GenerationStats
from engine.params import GenerationParams


def test_every_drafter_is_a_side_and_only_the_mode_and_drafter_change() -> None:
    assert sides() == ("standard", *names())
    params = GenerationParams(temperature=0.7, seed=3, drafter="model")
    mtp = side_params(params, "mtp")
    assert (mtp.mode, mtp.drafter) == ("speculative", "mtp")
    assert mtp.replace(drafter="model") == params  # seed, temperature and the rest are the same on both sides
    assert side_params(params, "standard") == params.replace(mode="standard")
    assert [side_label(s) for s in ("standard", "mtp", "eagle3")] == ["standard decoding", "built-in MTP drafter", "EAGLE-3 drafter"]


def test_sampling_without_a_seed_gets_one_seed_for_both_sides() -> None:
    sampled = GenerationParams(temperature=0.6)
    seeded = compared_params(sampled)
    assert seeded.seed is not None and seeded.replace(seed=None) == sampled
    assert compared_params(sampled.replace(seed=7)).seed == 7  # the user's seed stays
    assert compared_params(GenerationParams(temperature=0)) == GenerationParams(temperature=0)  # greedy needs none


def test_a_side_that_is_no_way_of_decoding_or_twice_the_same_is_refused() -> None:
    check_sides("eagle3", "model")
    with pytest.raises(InvalidParameterError, match="Both sides are built-in MTP drafter"):
        check_sides("mtp", "mtp")
    with pytest.raises(InvalidParameterError, match="cannot run 'turbo': choose one of standard, auto, model"):
        check_sides("turbo", "model")


def _result(mode: str, tps: float, drafted: int = 0, accepted: int = 0, rounds: int = 10) -> GenerationResult:
    stats = GenerationStats(generated_tokens=int(tps * 2), rounds=rounds, drafted=drafted, accepted=accepted, generation_s=2.0)
    return GenerationResult("", [], [], mode, "length", stats)  # type: ignore[arg-type]  # strings for Literals


def test_the_verdict_names_both_sides_and_the_second_one_s_speed_against_the_first() -> None:
    line = verdict("model", _result("speculative", 10.0, 20, 10), "eagle3", _result("speculative", 15.0, 30, 24))
    assert line == ("Draft model 10.0 tok/s (2.00 tokens per pass, 50% of 20 drafted accepted), EAGLE-3 drafter 15.0 tok/s "
                    "(3.00 tokens per pass, 80% of 30 drafted accepted): EAGLE-3 drafter 1.50x (faster than draft model)")
    slower = verdict("standard", _result("standard", 10.0), "lookup", _result("speculative", 8.0, 20, 2))
    assert slower.endswith("lookup 0.80x (slower than standard decoding: speculation does not pay here)")
    assert "Standard decoding 10.0 tok/s (1 token per pass)" in slower
    mtp = verdict("mtp", _result("speculative", 12.0, 10, 8), "standard", _result("standard", 10.0))
    assert mtp.startswith("Built-in MTP drafter 12.0 tok/s")  # "Built-in mtp drafter" with str.capitalize()


def test_no_winner_is_declared_from_noise_or_from_answers_of_very_different_lengths() -> None:
    """"lookup 0.98x (slower than standard decoding…)" stood beside "Nothing was drafted", and a 9-token side was
    given a ratio against a 512-token one."""
    nothing = verdict("standard", _result("standard", 10.0), "lookup", _result("speculative", 9.8))
    assert "(nothing drafted: it ran as standard decoding)" in nothing and "x (" not in nothing
    assert nothing.endswith("both ran standard decoding, so neither is faster (their difference is the machine's noise)")
    short, long = _result("speculative", 4.5, 4, 2), _result("standard", 256.0)  # 9 tokens against 512
    uneven = verdict("standard", long, "model", short)
    assert uneven.endswith("the answers' lengths differ too much to compare (9 against 512 tokens); try a prompt "
                           "both answer at length") and "x (" not in uneven
    brief = verdict("standard", _result("standard", 6.0), "auto", _result("speculative", 5.5, 4, 1))  # 12 and 11 tokens
    assert brief.endswith("the answers are too short to time (11 and 12 tokens: a few rounds, which the machine's noise "
                          "outweighs); try a prompt both answer at length") and "x (" not in brief


def test_compare_runs_up_to_the_last_question_or_the_typed_one() -> None:
    from engine.comparison import compare_messages

    chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    assert compare_messages(chat, "") == chat[:1]  # the answer after it would be compared against itself
    assert compare_messages(chat, "More?") == [*chat, {"role": "user", "content": "More?"}]
    assert chat == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]  # left as it was


def test_only_the_drafters_a_pair_has_are_runnable_sides() -> None:
    from engine.comparison import runnable_sides

    assert runnable_sides(("lookup",)) == ("standard", "auto", "lookup")
    assert runnable_sides(("lookup", "model")) == ("standard", "auto", "model", "lookup", "model+lookup")
    assert runnable_sides(("lookup", "dflash")) == ("standard", "auto", "lookup", "dflash")
