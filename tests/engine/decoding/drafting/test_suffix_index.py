"""The suffix array finds the longest match of a context's end in many documents, and its most frequent continuation."""

from __future__ import annotations

import numpy as np

from engine.decoding.drafting.suffix_index import MAX_MATCH, SuffixIndex, sorted_suffixes


def brute_force_longest_match(documents: list[list[int]], context: list[int]) -> int:
    best = 0
    for document in documents:
        for end in range(1, len(document) + 1):
            n = 0
            while n < min(end, len(context), MAX_MATCH) and document[end - 1 - n] == context[-1 - n]:
                n += 1
            best = max(best, n)
    return best


def test_suffixes_are_sorted_to_the_depth_asked() -> None:
    text = np.random.default_rng(0).integers(0, 4, 400).astype(np.int32)
    order = sorted_suffixes(text, 16)
    keys = [tuple(text[i : i + 16]) for i in order]
    assert keys == sorted(keys) and sorted(order.tolist()) == list(range(400))


def test_the_longest_match_equals_a_brute_force_search() -> None:
    rng = np.random.default_rng(1)
    documents = [rng.integers(0, 6, rng.integers(5, 60)).tolist() for _ in range(20)]
    index = SuffixIndex(documents)
    for _ in range(200):
        context = rng.integers(0, 6, rng.integers(1, 40)).tolist()
        assert index.match(context)[0] == brute_force_longest_match(documents, context)


def test_the_continuation_is_the_most_frequent_and_never_crosses_documents() -> None:
    index = SuffixIndex([[1, 2, 3, 4, 5, 6], [9, 2, 3, 4, 7, 8], [2, 3, 4, 5, 6, 10]])
    found = index.continuation([0, 2, 3, 4])
    assert found.match_length == 3 and found.occurrences == 3
    assert found.tokens == [5, 6, 10] and found.confidence == [2 / 3, 1.0, 0.5]  # 6 ends the first document
    assert index.continuation([1, 2, 3, 4]).tokens == [5, 6]  # the longer match has one occurrence


def test_matches_shorter_than_asked_propose_nothing() -> None:
    index = SuffixIndex([[1, 2, 3]])
    assert index.continuation([7, 2], min_length=2).tokens == []
    assert index.continuation([1, 2], min_length=2).tokens == [3]
