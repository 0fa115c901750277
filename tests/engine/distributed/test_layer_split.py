"""Layers by each Mac's free memory: proportional, at least one each, never more than a Mac holds."""

from __future__ import annotations

import pytest

from engine.distributed.layer_split import MEMORY_ENV, split_layers, stated_memory_gb
from engine.errors import DistributedError


def test_layers_follow_free_memory_not_an_even_split() -> None:
    assert split_layers(80, [64, 24], 0.5, [4, 0]) == [57, 23]  # a 64 GB head (4 GB reserved) and a 24 GB Mac
    assert split_layers(4, [1, 3], 0.001, [0, 0]) == [1, 3]


def test_equal_memory_splits_evenly_with_the_remainder_on_the_largest_shares() -> None:
    assert split_layers(4, [1, 1, 1], 0.001, [0, 0, 0]) == [2, 1, 1]
    assert sum(split_layers(81, [10, 10, 10], 0.1, [0, 0, 0])) == 81


def test_every_rank_runs_at_least_one_layer() -> None:
    assert split_layers(5, [100, 1, 1], 0.01, [0, 0, 0]) == [3, 1, 1]


def test_no_rank_gets_more_layers_than_its_memory_holds() -> None:
    # In proportion rank 2 would get 2 layers of 1 GB (rounded up from 1.43) but holds 1.9 GB: rank 1 takes one.
    assert split_layers(5, [1.7, 3.2, 1.9], 1.0, [0, 0, 0]) == [1, 3, 1]


def test_a_mac_without_room_for_one_layer_is_refused() -> None:
    with pytest.raises(DistributedError, match=r"^Rank 0 has 0.5 GB free, less than one layer \(1.00 GB\)"):
        split_layers(2, [0.5, 2.0], 1.0, [0, 0])


def test_a_model_that_does_not_fit_is_refused_with_the_numbers() -> None:
    with pytest.raises(DistributedError, match=r"need 1.5 GB but the Macs have 1.5 GB free for them \(0.8, 0.8 GB\)"):
        split_layers(3, [0.75, 0.75], 0.5, [0, 0])


def test_more_macs_than_layers_is_refused() -> None:
    with pytest.raises(DistributedError, match="fewer than the 3 Macs"):
        split_layers(2, [1, 1, 1], 0.1, [0, 0, 0])


def test_a_mac_states_its_memory_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV, "24.5")
    assert stated_memory_gb() == 24.5
