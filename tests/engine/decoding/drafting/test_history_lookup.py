"""The history: conversations by key, bounded, indexed in two parts, saved and loaded."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.decoding.drafting import history_lookup as history_module
from engine.decoding.drafting.history_lookup import DraftHistory, document_key


def test_a_later_turn_replaces_the_earlier_version_of_its_conversation() -> None:
    history = DraftHistory()
    first_turn = list(range(100, 180))
    history.add(first_turn)
    history.add(first_turn + [7, 8, 9])
    assert history.documents == 1 and document_key(first_turn) == document_key(first_turn + [7])
    assert history.continuation([177, 178, 179], 4).tokens == [7, 8, 9]


def test_two_chats_that_start_alike_are_both_kept() -> None:
    """They used to share a key (their first 64 tokens), so the second replaced the first."""
    history = DraftHistory()
    opening = list(range(100, 180))
    history.add(opening + [7, 8, 9, 10])
    history.add(opening + [20, 21, 22, 23])
    assert history.documents == 2
    assert history.continuation([7, 8], 2).tokens == [9, 10]
    assert history.continuation([20, 21], 2).tokens == [22, 23]
    history.add(opening + [20, 21, 22, 23, 24, 25])  # the second chat's next turn replaces only the second
    assert history.documents == 2 and history.continuation([22, 23], 2).tokens == [24, 25]


def test_the_history_is_bounded_dropping_the_oldest_conversations() -> None:
    history = DraftHistory(max_tokens=250)
    for start in (1000, 2000, 3000):
        history.add(list(range(start, start + 100)))
    assert history.tokens == 200
    assert history.continuation([1010, 1011], 2).tokens == []  # the oldest went
    assert history.continuation([3010, 3011], 2).tokens == [3012, 3013]


def test_the_recent_index_is_merged_into_the_main_one(monkeypatch) -> None:
    monkeypatch.setattr(history_module, "RECENT_TOKENS", 150)
    history = DraftHistory()
    history.add(list(range(100, 200)))
    assert history._recent.tokens > 0 and history._main.tokens == 0
    history.add(list(range(500, 600)))  # past RECENT_TOKENS: merged in the background
    history.wait()
    assert history._main.documents == 2 and history._recent.tokens == 0
    assert history.continuation([510, 511], 2).tokens == [512, 513]


def test_saved_conversations_are_indexed_in_the_background(tiny_dirs) -> None:
    from engine.decoding.drafting.history_lookup import start_indexing

    chats = [[{"role": "user", "content": "Name the planets of the solar system in order please"}],
             [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]]
    history = DraftHistory()
    start_indexing(history, tiny_dirs[0], lambda: iter(chats)).join()
    history.wait()
    assert history.documents == 2 and history._main.documents == 2


def test_indexing_that_fails_leaves_the_history_empty(tmp_path: Path) -> None:
    from engine.decoding.drafting.history_lookup import start_indexing

    history = DraftHistory()
    start_indexing(history, tmp_path / "no-model", lambda: iter([])).join()
    assert history.documents == 0


def test_excluding_a_phrase_leaves_out_the_conversations_that_contain_it() -> None:
    from engine.decoding.drafting.history_lookup import contains

    history = DraftHistory()
    asked = [1, 2, 3, 40, 41, 42, 43, 9, 9, 9, 50, 51, 52, 53]  # the question (40-43), then its answer (50-53)
    other = [7, 8, 50, 51, 52, 60, 61]
    history.add(asked)
    history.add(other)
    assert contains(np.asarray(asked, dtype=np.int32), [41, 42]) and not contains(np.asarray(other, dtype=np.int32), [41, 42])
    left = history.excluding([41, 42])
    assert left.documents == 1 and left.continuation([50, 51], 4).tokens == [52, 60, 61]
    assert history.excluding([99, 98]) is history  # nothing to leave out: no new index
