"""A drafter's store of the target's hidden states keeps what the target's passes left, by position."""

from __future__ import annotations

import mlx.core as mx

from engine.decoding.drafting.drafter_state import HiddenStore


def test_the_store_keeps_what_passes_left_and_forgets_what_a_rewind_replaced() -> None:
    store = HiddenStore()
    store.put(0, mx.arange(8).reshape(4, 2))
    store.put(4, mx.arange(8, 14).reshape(3, 2))
    assert store.rows(2, 6).tolist() == [[4, 5], [6, 7], [8, 9], [10, 11]]
    store.put(5, mx.full((2, 2), -1))  # the target ran position 5 again: what it held from 5 on is gone
    assert store.end == 7 and store.rows(4, 7).tolist() == [[8, 9], [-1, -1], [-1, -1]]
    store.drop_before(5)
    assert store.start == 5 and store.rows(4, 6) is None
    store.put(9, mx.zeros((1, 2)))  # a gap (passes it did not hear): only what follows it is kept
    assert (store.start, store.end) == (9, 10)
