"""The head's proxy of the target: before each pass, one message with the count trimmed since the last pass."""

from __future__ import annotations

import mlx.core as mx
import pytest

from engine.decoding.cached_model import CachedModel
from engine.distributed.head import PipelineHead
from engine.distributed.messages import FORWARD, STOP, Message, decode
from engine.errors import DistributedError


class Recorder:
    """A transport that keeps what the head broadcasts."""

    broken = False

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def all_sum(self, x: mx.array, originates: bool = False) -> mx.array:
        self.messages.append(decode(x.tolist()))
        return x


@pytest.fixture
def head_cache(tiny_target) -> tuple[CachedModel, Recorder]:
    recorder = Recorder()
    return CachedModel(PipelineHead(tiny_target.model, recorder)), recorder  # type: ignore[arg-type]  # a recording stand-in for the ring


def test_each_pass_tells_the_position_the_tokens_and_what_was_trimmed_since(head_cache) -> None:
    cache, recorder = head_cache
    cache.catch_up([5, 6, 7, 8, 9, 10], max_tail=1)  # prefill all but the last token
    cache.forward(mx.array([10, 11, 12], dtype=mx.uint32), ids=[10, 11, 12])  # a verify pass: 2 drafts
    cache.rewind_to(7)  # the second draft was rejected
    cache.forward(mx.array([20], dtype=mx.uint32), ids=[20])
    assert recorder.messages == [
        Message(FORWARD, trim=0, position=0, tokens=[5, 6, 7, 8, 9]),
        Message(FORWARD, trim=0, position=5, tokens=[10, 11, 12]),
        Message(FORWARD, trim=1, position=7, tokens=[20]),
    ]


def test_lazy_drafts_are_read_for_the_message(head_cache) -> None:
    cache, recorder = head_cache
    drafts = mx.array([3, 4], dtype=mx.uint32) * 2  # not evaluated yet, as a draft model leaves them
    cache.forward(drafts)
    assert recorder.messages[-1].tokens == [6, 8]


def test_a_cache_that_starts_over_trims_everything(head_cache) -> None:
    cache, recorder = head_cache
    cache.catch_up([5, 6, 7, 8], max_tail=1)
    cache.reset()
    cache.forward(mx.array([1], dtype=mx.uint32), ids=[1])
    assert recorder.messages[-1] == Message(FORWARD, trim=3, position=0, tokens=[1])


def test_a_cache_ahead_of_the_other_ranks_is_an_error_not_a_silent_divergence(head_cache, tiny_target) -> None:
    cache, recorder = head_cache
    cache.catch_up([5, 6, 7, 8], max_tail=1)
    other = CachedModel(tiny_target.model)  # filled outside the proxy: the other ranks never saw these
    other.catch_up([1, 2, 3, 4, 5, 6, 7], max_tail=1)
    with pytest.raises(DistributedError, match="the ranks diverged"):
        cache.model(mx.array([[9]]), cache=other.cache)


def test_close_stops_every_rank_once(head_cache) -> None:
    cache, recorder = head_cache
    cache.model.close()
    cache.model.close()
    assert recorder.messages == [Message(STOP)]
