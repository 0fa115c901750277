"""Prompt lookup finds what followed the latest earlier occurrence of the context's last n-gram."""

from __future__ import annotations

from engine.decoding.draft import NO_DRAFT
from engine.decoding.policy import FixedDraftLength
from engine.decoding.prompt_lookup import NgramIndex, PromptLookupDrafter


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
    drafter.start([10, 11, 12, 13, 14, 10, 11])
    draft = drafter.propose([10, 11, 12, 13, 14, 10, 11], 3)
    assert draft.tokens.tolist() == [12, 13, 14] and draft.source == "lookup" and draft.probs is None
    assert drafter.propose([10, 11, 12, 13, 14, 10, 11, 12, 99], 3) is NO_DRAFT
