"""The clock: every time an answer measures is read from `clock.now`, so a test can make the costs its own."""

from __future__ import annotations

from engine.decoding.generation import generate_stream
from engine.decoding.pair import ModelPair
from engine.events import GenerationResult, RoundEvent
from engine.params import GenerationParams


def test_every_time_an_answer_measures_is_read_from_the_clock(tiny_pair: ModelPair, ticking_clock) -> None:
    """Under a clock that ticks whole milliseconds, every time an answer reports is whole milliseconds: a reading
    taken from another clock (the wall clock's fractions) would show, and the policy would choose from it."""
    params = GenerationParams(temperature=0.0, max_tokens=24)
    events = list(generate_stream(tiny_pair, "Repeat this: the cat sat on the mat, the cat sat on the", params))
    result = events[-1]
    rounds = [event for event in events if isinstance(event, RoundEvent)]
    assert isinstance(result, GenerationResult)
    times = [result.stats.prompt_s, result.stats.ttft_s, result.stats.total_s]
    times += [seconds for event in rounds for seconds in (event.draft_s, event.verify_s)]
    assert rounds and result.stats.drafted and all(round(t * 1000, 6).is_integer() for t in times), times
