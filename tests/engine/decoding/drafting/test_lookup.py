"""Prompt lookup finds what followed the latest earlier occurrence of the context's last n-gram."""

from __future__ import annotations

from engine.decoding.drafting.drafter import NO_DRAFT
from engine.decoding.drafting.lookup import NgramIndex, PromptLookupDrafter
from engine.decoding.policy.draft_length import FixedDraftLength


def index_of(tokens: list[int]) -> NgramIndex:
    index = NgramIndex(max_ngram=3, min_ngram=2)
    index.extend(tokens)
    return index


def test_proposes_the_continuation_of_the_longest_matching_suffix() -> None:
    # The 3-gram (1, 2, 3) occurred before, followed by 4, 5; the 2-gram (2, 3) also occurred later with 9.
    tokens = [1, 2, 3, 4, 5, 7, 2, 3, 9, 0, 1, 2, 3]
    assert index_of(tokens).continuation(3) == [4, 5, 7]


def test_prefers_the_most_recent_occurrence() -> None:
    tokens = [5, 6, 1, 5, 6, 2, 5, 6]
    assert index_of(tokens).continuation(2) == [2, 5]


def test_no_earlier_occurrence_means_no_proposal() -> None:
    assert index_of([1, 2, 3, 4]).continuation(4) == []
    assert index_of([1]).continuation(4) == []


def test_single_token_matches_are_too_weak_to_propose() -> None:
    assert index_of([1, 8, 3, 1]).continuation(2) == []


def test_incremental_indexing_equals_indexing_at_once() -> None:
    tokens = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5]
    grown = NgramIndex(max_ngram=3, min_ngram=2)
    for i in range(len(tokens)):
        grown.extend(tokens[i : i + 1])
        assert grown.continuation(4) == index_of(tokens[: i + 1]).continuation(4)


def test_drafter_follows_the_context() -> None:
    drafter = PromptLookupDrafter(FixedDraftLength(3))
    drafter.start([10, 11, 12, 13, 14, 15, 10, 11, 12])
    draft = drafter.propose([10, 11, 12, 13, 14, 15, 10, 11, 12], 3)
    assert draft.tokens.tolist() == [13, 14, 15] and draft.source == "lookup" and draft.probs is None
    assert drafter.propose([10, 11, 12, 13, 14, 15, 10, 11, 12, 99], 3) is NO_DRAFT


def test_the_match_is_followed_back_beyond_the_ngram_keys() -> None:
    tokens = [7, 1, 2, 3, 4, 5, 6, 8, 9, 0, 1, 2, 3, 4, 5]
    found = index_of(tokens).match(3)
    assert found.tokens == [6, 8, 9] and found.match_length == 5  # 1..5 matched, though keys are 3-grams


def test_drafts_scale_with_the_match_and_stop_where_occurrences_disagree() -> None:
    from engine.decoding.drafting.lookup import MIN_PATH_SHARE, draftable
    from engine.decoding.drafting.suffix_index import Continuation

    assert draftable(Continuation(1, [1, 2, 3, 4, 5], [1.0] * 5, 1), 8) == [1, 2]  # a 1-token match drafts 2
    assert draftable(Continuation(9, [1, 2, 3, 4, 5], [1.0] * 5, 1), 3) == [1, 2, 3]  # the policy's limit
    weak = MIN_PATH_SHARE ** 0.5 * 0.99
    assert draftable(Continuation(9, [1, 2, 3], [1.0, weak, weak], 4), 8) == [1, 2]


def test_the_drafter_reads_the_history_when_it_matches_longer() -> None:
    from engine.decoding.drafting.history_lookup import DraftHistory

    history = DraftHistory()
    history.add([50, 51, 52, 53, 54, 55, 56, 57, 58, 59])  # an earlier chat
    drafter = PromptLookupDrafter(FixedDraftLength(4), history)
    context = [1, 2, 52, 53, 54, 55]
    drafter.start(context[:4])  # the answer has written 54, 55 so far
    draft = drafter.propose(context, 4)
    assert draft.tokens.tolist() == [56, 57, 58, 59] and draft.source == "lookup"  # a 4-token match: short
    # the context's own earlier occurrence wins a tie: it is the more recent text
    context = [52, 53, 54, 55, 9, 9, 52, 53, 54, 55]
    drafter.start(context[:-2])
    assert drafter.propose(context, 4).tokens.tolist()[:1] == [9]
    # unless the history saw the match several times going on the same way (an edit asked for again)
    history.add([60, 52, 53, 54, 55, 56, 57])
    history.add([61, 52, 53, 54, 55, 56, 58])
    drafter.start(context[:-2])
    assert drafter.propose(context, 4).tokens.tolist()[:1] == [56]


def test_the_history_does_not_draft_an_answers_opening_from_another_chat() -> None:
    """Every saved chat ends its prompt in the same template header ("<|im_start|>assistant\n"), so at an
    answer's opening the history matches only that header and would draft another chat's answer ("The capital
    of France") for an unrelated question; it drafts once the answer's own tokens match too."""
    from engine.decoding.drafting.history_lookup import DraftHistory
    from engine.decoding.drafting.lookup import OWN_SUPPORT

    header = [7, 8, 9]  # the template's "assistant" header
    history = DraftHistory()
    history.add([1, 70, 71, 72] + header + [40, 41, 42, 43, 44])  # another chat: a question and its answer
    drafter = PromptLookupDrafter(FixedDraftLength(4), history)
    prompt = [1, 80, 81, 82] + header  # an unrelated question
    drafter.start(prompt)
    assert drafter.propose(prompt, 4) is NO_DRAFT
    answer = [40, 41, 42][:OWN_SUPPORT]  # the answer happens to go the same way: now its own tokens support it
    assert drafter.propose(prompt + answer, 4).tokens.tolist()[:1] == [40 + OWN_SUPPORT]


def test_long_matches_are_drafted_under_their_own_estimate() -> None:
    from engine.decoding.drafting.lookup import LONG_MATCH

    copied = list(range(100, 100 + LONG_MATCH + 4))
    context = copied + [1] + copied[:LONG_MATCH]
    drafter = PromptLookupDrafter(FixedDraftLength(4))
    drafter.start(context)
    assert drafter.propose(context, 4).source == "lookup+long"


def test_a_match_declined_for_a_queued_pass_leaves_the_next_pass_unqueued() -> None:
    """After a pipelined plain step a draft costs a verify pass of its own, so the policy may decline a fair
    match; the drafter then asks not to queue the next pass, so that the next round can draft in one pass
    (summarising fell from 4.5 to 3.3 tokens per pass without this)."""
    from engine.decoding.policy.draft_length import AdaptiveDraftLength
    from engine.decoding.policy.estimates import RoundCosts

    policy = AdaptiveDraftLength(8)
    for _ in range(5):
        policy.observe(RoundCosts("none", 0, 0, None, 0.070))
    for accepted in (2, 0) * 4:
        policy.observe(RoundCosts("lookup", 2, accepted, 0.0, 0.080))
    context = [1, 2, 3, 4, 5, 6, 7, 9, 1, 2, 3, 4, 5]
    drafter = PromptLookupDrafter(policy)
    drafter.start(context)
    assert drafter.propose(context, 4, split_pass=True) is NO_DRAFT and not drafter.idle
    assert drafter.propose(context, 4, split_pass=False).count > 0
    assert drafter.idle
