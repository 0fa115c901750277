"""The conversation benchmark: every mode from the same state, turn by turn, the whole chat's speedup."""

from __future__ import annotations

import pytest

from engine.cli.benchmark import Run
from engine.cli.conversation_benchmark import run_conversation, summarize_conversation
from engine.decoding.pair import ModelPair
from engine.params import GenerationParams

GREEDY = GenerationParams(temperature=0.0, max_tokens=12)


def test_each_mode_starts_from_the_same_state(tiny_pair: ModelPair) -> None:
    """Without the fresh start, a mode's first turn would find the previous mode's chat in the prompt cache and
    in the history (and its policy taught)."""
    runs = run_conversation(tiny_pair, [["Hello", "Again"], ["Hello"]], ["standard", "prompt-lookup"], GREEDY)
    assert [r.category for r in runs] == ["chat 1 turn 1", "chat 1 turn 2", "chat 2 turn 1"] * 2
    assert all(r.identical_to_standard for r in runs)
    assert tiny_pair.history.documents == 2  # the two chats of the last mode, and nothing before them


def test_the_second_chat_is_drafted_from_the_first(tiny_pair: ModelPair) -> None:
    """History carries from one chat to the next within a mode: the same question again is drafted from it (at a
    fixed K: the adaptive policy picks K from timings, which a busy machine changes)."""
    params = GenerationParams(temperature=0.0, max_tokens=40, num_draft=4, adaptive=False)
    runs = run_conversation(tiny_pair, [["Tell me a story"], ["Tell me a story"]], ["standard", "prompt-lookup-fixed"], params)
    first, second = [r for r in runs if r.mode == "prompt-lookup-fixed"]
    assert second.identical_to_standard and second.tokens_per_pass > first.tokens_per_pass


def run(mode: str, index: int, iteration: int, tokens: int, seconds: float) -> Run:
    return Run(mode, index, iteration, tokens, tokens / seconds, None, 1.0, timed_tokens=tokens, timed_s=seconds,
               category=f"chat 1 turn {index + 1}")


def test_the_summary_speedup_is_over_the_whole_chat() -> None:
    runs = [run("standard", 0, 0, 100, 10.0), run("standard", 1, 0, 100, 10.0),
            run("lookup", 0, 0, 100, 10.0), run("lookup", 1, 0, 100, 2.5)]
    summary = summarize_conversation(runs)
    assert summary["lookup"]["speedup_vs_standard"] == pytest.approx(200 / 12.5 / 10)  # 1.6, not the mean 2.5
    assert [t["speedup_vs_standard"] for t in summary["lookup"]["turns"]] == [1.0, 4.0]


def test_the_context_only_mode_does_not_draft_from_the_first_chat(tiny_pair: ModelPair) -> None:
    """prompt-lookup-context is today's lookup without the history: the repeated question gains nothing."""
    params = GenerationParams(temperature=0.0, max_tokens=40)
    runs = run_conversation(tiny_pair, [["Tell me a story"], ["Tell me a story"]],
                            ["standard", "prompt-lookup", "prompt-lookup-context"], params)
    history, context = ([r for r in runs if r.mode == mode][1] for mode in ("prompt-lookup", "prompt-lookup-context"))
    assert history.identical_to_standard and context.identical_to_standard
    assert context.tokens_per_pass < history.tokens_per_pass
