"""Drafting with an EAGLE-3 drafter keeps the output exactly the target's, greedy and sampled.

The tiny pair (engine/fixtures/tiny_eagle3.py) has 8 ids, a drafter that can draft 5 of them and agrees with the
target often but not always, so rounds accept some drafts and roll back the rest, and some of the target's tokens
can never be drafted (q is zero there).
"""

from __future__ import annotations

import pytest

from engine.decoding.generation import generate, generate_stream
from engine.decoding.pair import ModelPair
from engine.errors import InvalidParameterError
from engine.events import GenerationResult, RoundEvent
from engine.params import GenerationParams
from tests.helpers import assert_a_regenerate_and_a_gap_keep_the_output, assert_sampling_is_exact, two_turns

GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=40, drafter="eagle3")


def test_greedy_eagle3_drafts_are_token_identical_to_standard_decoding(eagle3_pair) -> None:
    """Fixed K = 1 (the head's one step from the target's tapped layers) and 5 (four more steps on its own output,
    rolled back at every depth from 1 to 5), as MTP's: the EAGLE-3 drafter runs MTPDrafter's loop, draft_steps,
    once per draft token, so K = 2 and 8, which ran here before, took that loop fewer or more times."""
    expected = [answer.tokens for answer in two_turns(ModelPair(eagle3_pair.target()), GREEDY.replace(mode="standard"))]
    assert all(len(set(tokens)) >= 3 for tokens in expected)  # the answers do not collapse to one letter
    pair = eagle3_pair.pair()
    for k in (1, 5):
        answers = two_turns(pair, GREEDY.replace(num_draft=k, adaptive=False))
        assert [answer.tokens for answer in answers] == expected, k
        drafted, accepted = sum(a.stats.drafted for a in answers), sum(a.stats.accepted for a in answers)
        assert 0 < accepted < drafted, k  # partial accepts: rollbacks ran
    assert pair.target_cache.rewinds["reset"] == 0


def test_a_regenerate_and_an_answer_the_drafter_did_not_hear_keep_the_output(eagle3_pair) -> None:
    fixed = GREEDY.replace(num_draft=3, adaptive=False)
    assert_a_regenerate_and_a_gap_keep_the_output(eagle3_pair.pair(), eagle3_pair.target(), fixed)


def test_the_adaptive_policy_keeps_the_output(eagle3_pair) -> None:
    expected = generate("abcabd", ModelPair(eagle3_pair.target()), GREEDY.replace(mode="standard", max_tokens=80)).tokens
    assert generate("abcabd", eagle3_pair.pair(), GREEDY.replace(max_tokens=80)).tokens == expected


def test_the_round_events_and_stats_name_the_eagle3_drafter(eagle3_pair) -> None:
    events = list(generate_stream(eagle3_pair.pair(), "abcabd", GREEDY.replace(num_draft=3, adaptive=False)))
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    assert {r.drafter for r in rounds if r.drafted} == {"eagle3"}
    assert all(r.trace_record()["drafter"] in ("eagle3", "none") for r in rounds)
    adaptive = generate("abcabd", eagle3_pair.pair(), GREEDY)
    assert [belief.drafter for belief in adaptive.stats.policy] == ["eagle3"]


def test_drafts_stay_inside_the_draft_vocabulary(eagle3_pair) -> None:
    from engine.fixtures.tiny_eagle3 import DRAFT_IDS

    events = list(generate_stream(eagle3_pair.pair(), "abcabd", GREEDY.replace(num_draft=4, adaptive=False)))
    drafted = {token for e in events if isinstance(e, RoundEvent) for token in e.draft}
    emitted = {token for e in events if isinstance(e, GenerationResult) for token in e.tokens}
    assert drafted <= set(DRAFT_IDS) and not emitted <= set(DRAFT_IDS)  # the target says what the drafter cannot


def test_the_eagle3_drafter_without_a_drafter_loaded_is_refused_in_one_line(eagle3_pair) -> None:
    with pytest.raises(InvalidParameterError, match="needs an EAGLE-3 drafter: load its folder as the draft"):
        generate("abc", ModelPair(eagle3_pair.target()), GREEDY)


def test_the_draft_model_drafter_with_an_eagle3_draft_says_how_to_draft_with_it(eagle3_pair) -> None:
    with pytest.raises(InvalidParameterError, match="the draft loaded is an EAGLE-3 drafter: draft with the EAGLE-3 drafter"):
        generate("abc", eagle3_pair.pair(), GREEDY.replace(drafter="model"))


@pytest.mark.statistical
def test_sampled_tokens_follow_the_target_distribution(eagle3_pair) -> None:
    """At T = 1 the first two tokens of many answers match the target's exact distributions (tests/helpers.py): q is
    the drafter's softmax mapped to the target's ids (zero outside its vocabulary), so the rejection rule holds.

    Power against a correction drawn from p: noncentrality 0.033 per answer, 0.98 at 1200 answers."""
    params = GenerationParams(temperature=1.0, top_p=1.0, max_tokens=2, num_draft=3, adaptive=False, drafter="eagle3")
    assert_sampling_is_exact(eagle3_pair.pair(), params, 1200)
