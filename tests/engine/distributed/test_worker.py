"""A worker's cache follows the head's: the same trim, the same position, the same key/value precision."""

from __future__ import annotations

import pytest
from mlx_lm.models.cache import QuantizedKVCache

from engine.distributed.messages import FORWARD, Message
from engine.distributed.worker import StageCache
from engine.errors import DistributedError


def test_a_worker_trims_what_the_head_trimmed_and_runs_the_tokens(tiny_target) -> None:
    cache = StageCache(tiny_target.model)
    for message in (Message(FORWARD, 0, 0, [5, 6, 7, 8]), Message(FORWARD, 2, 2, [9])):
        cache.follow(message)
        cache.run(message.tokens)
    assert cache.offset == 3


def test_a_worker_that_disagrees_with_the_head_stops_rather_than_diverge(tiny_target) -> None:
    cache = StageCache(tiny_target.model)
    cache.follow(Message(FORWARD, 0, 0, [5, 6, 7]))
    cache.run([5, 6, 7])
    with pytest.raises(DistributedError, match="holds 2 positions where the head's holds 3"):
        cache.follow(Message(FORWARD, 1, 3, [8]))


def test_a_new_precision_starts_the_cache_over_in_it(family_models) -> None:
    cache = StageCache(family_models("qwen3")[0].model)  # heads of 32: keys quantize in groups of 32
    cache.follow(Message(FORWARD, 0, 0, [5, 6]))
    cache.run([5, 6])
    cache.follow(Message(FORWARD, 2, 0, [5], kv_bits=8))
    assert isinstance(cache.layers[0], QuantizedKVCache) and cache.layers[0].bits == 8
