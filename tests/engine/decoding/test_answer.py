"""The answer's rounds: the network's share of their time when the target runs across Macs (none on one), and the
text of what they drafted."""

from __future__ import annotations

import dataclasses

import mlx.core as mx
import pytest

from engine.decoding.answer import END_OF_ANSWER, Answer
from engine.decoding.generation import generate_stream
from engine.decoding.pair import ModelPair
from engine.decoding.rounds import Round
from engine.distributed.head import PipelineHead
from engine.events import GenerationResult, GenerationStats, RoundEvent
from engine.params import GenerationParams

MESSAGE_S = 0.25  # what the fake network charges for each of the head's messages


class SlowRing:
    """A transport of one rank whose every message costs MESSAGE_S of network time (a counter, not a wait)."""

    broken = False

    def __init__(self) -> None:
        self.seconds = 0.0
        self.messages = 0

    def all_sum(self, x: mx.array, originates: bool = False) -> mx.array:
        self.messages += 1
        self.seconds += MESSAGE_S
        return x


def run(pair: ModelPair, **settings: object) -> tuple[list[RoundEvent], GenerationResult]:
    params = GenerationParams.preset("greedy", max_tokens=12, history=False, **settings)
    events = list(generate_stream(pair, "Tell me about foxes and the sea.", params))
    return [e for e in events if isinstance(e, RoundEvent)], events[-1]


def pipelined_pair(tiny_target, draft=None) -> tuple[ModelPair, SlowRing]:  # LoadedModels
    ring = SlowRing()
    pair = ModelPair(dataclasses.replace(tiny_target, model=PipelineHead(tiny_target.model, ring)), draft)  # type: ignore[arg-type]  # a recording stand-in for the ring
    _ = pair.vocab_width  # its probe pass is no round's
    return pair, ring


def test_each_speculative_round_carries_the_network_time_of_its_one_pass(tiny_target, tiny_draft) -> None:
    pair, ring = pipelined_pair(tiny_target, tiny_draft)
    rounds, result = run(pair, drafter="model", adaptive=False, num_draft=3)
    assert rounds and all(r.drafted for r in rounds[:-1]) and all(r.network_s == pytest.approx(MESSAGE_S) for r in rounds)  # one message (pass) per round
    assert result.stats.network_s == pytest.approx(MESSAGE_S * len(rounds))  # the prompt's passes are no round's
    assert ring.messages > len(rounds)
    assert result.stats.network_share == pytest.approx(min(result.stats.network_s / result.stats.generation_s, 1.0))
    assert "network" in result.summary() and rounds[0].trace_record()["network_s"] == pytest.approx(MESSAGE_S)


def test_standard_steps_count_each_pass_in_the_round_that_queued_it(tiny_target) -> None:
    """Plain steps are pipelined: the first round also queues the second's pass, and the last queues none."""
    pair, _ = pipelined_pair(tiny_target)
    rounds, result = run(pair, mode="standard")
    assert [r.network_s for r in rounds] == pytest.approx([2 * MESSAGE_S] + [MESSAGE_S] * (len(rounds) - 2) + [0.0])
    assert result.stats.network_s == pytest.approx(MESSAGE_S * len(rounds))


def test_on_one_machine_rounds_carry_no_network_time(tiny_pair) -> None:
    rounds, result = run(tiny_pair)
    assert rounds and all(r.network_s is None for r in rounds)
    assert result.stats.network_s is None and result.stats.network_share is None
    assert "network" not in result.summary() and rounds[0].trace_record()["network_s"] is None



def test_a_drafted_end_token_reads_as_the_end_of_the_answer_not_as_its_raw_marker(tiny_target) -> None:
    """A draft that would have ended the answer, rejected, shows in the rounds as END_OF_ANSWER: its raw text
    (`<|im_end|>`) is no text the model wrote, and the app strikes rejected draft text through as if it were."""
    tokenizer = tiny_target.tokenizer
    end = sorted(tokenizer.eos_token_ids)[0]
    word = tokenizer.encode("Hello", add_special_tokens=False)[0]
    answer = Answer([word], GenerationParams(max_tokens=8), 64, tokenizer, GenerationStats(), 0.0)
    drafted = Round(tokens=[word, word], origins=["accepted", "corrected"], drafted=2, accepted=1, drafter="model",
                    draft_s=0.0, verify_s=0.0, draft_ids=[word, end], p=[1.0, 0.0], q=[1.0, 1.0])
    rounds = [event for event in answer.take(drafted) if isinstance(event, RoundEvent)]
    assert rounds[0].draft_text == (tokenizer.decode([word]), END_OF_ANSWER)
    assert tokenizer.decode([end]) != END_OF_ANSWER


def test_drafts_past_an_accepted_end_are_not_counted(tiny_target) -> None:
    """The draft wrote the answer, its end and more; the verify accepted them all, and the answer ended at the end:
    the round counts the drafts up to the end (it read "9 of 10 accepted", a struck draft after the end)."""
    tokenizer = tiny_target.tokenizer
    end = sorted(tokenizer.eos_token_ids)[0]
    words = tokenizer.encode("Hello there", add_special_tokens=False)
    answer = Answer([words[0]], GenerationParams(max_tokens=32), 64, tokenizer, GenerationStats(), 0.0)
    draft = [*words, end, words[0], words[1]]
    whole = Round(tokens=[*draft, words[0]], origins=["accepted"] * len(draft) + ["bonus"], drafted=len(draft),
                  accepted=len(draft), drafter="model", draft_s=0.0, verify_s=0.0, draft_ids=draft, p=[1.0] * len(draft),
                  q=[1.0] * len(draft))
    rounds = [event for event in answer.take(whole) if isinstance(event, RoundEvent)]
    counted = len(words) + 1  # the answer's tokens and its end
    assert (answer.stats.drafted, answer.stats.accepted) == (counted, counted) and answer.finish == "stop"
    assert (rounds[0].drafted, rounds[0].accepted, rounds[0].rejected) == (counted, counted, None)
