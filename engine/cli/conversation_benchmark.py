"""Measuring modes on chats as people have them: turn after turn, prompt cache on, history carried over.

A single-prompt benchmark cannot show what multi-turn drafting gains: a second edit of the same code, a re-summary
of the same text, a new chat revisiting an old one. Here a conversation file lists user messages (one chat) or
lists of them (chats in order); each mode runs all of them from the same state (empty prompt cache, empty
history, an adaptive policy that has learnt nothing), and every turn is timed as the single-prompt benchmark
times a prompt. The summary's `speedup_vs_standard` is over the whole conversation (its tokens over its
seconds, against standard decoding's, median over iterations); `turns` has the figures of each turn.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..decoding.pair import ModelPair
from ..params import GenerationParams
from .benchmark import Run, measure_ours, mode_params, record, summarize, to_run, warm_up


def read_json(path: Path, what: str) -> Any:
    """A benchmark's JSON file (`what` names it in the error); ValueError saying why it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"Cannot read the {what} {path}: {e.strerror}. Check the path.") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e.msg}, line {e.lineno}). Fix the file.") from e


def load_chats(path: Path) -> list[list[str]]:
    """The chats of a conversation file; ValueError naming what is wrong with it."""
    data = read_json(path, "conversation file")
    chats = [data] if isinstance(data, list) and all(isinstance(m, str) for m in data) else data
    if not (isinstance(chats, list) and chats and all(
        isinstance(chat, list) and chat and all(isinstance(m, str) and m.strip() for m in chat) for chat in chats
    )):
        raise ValueError(
            f"{path} must hold a JSON list of user messages (one chat), or a list of such lists (chats in order), "
            'for example ["Fix this code: ...", "Now rename x to y."].'
        )
    return chats


def start_fresh(pair: ModelPair) -> None:
    """The state every mode's conversation starts from: nothing cached, no history, nothing learnt."""
    pair.reset_caches()
    pair.forget_history()
    pair.forget_policies()


def run_chats(
    pair: ModelPair, chats: list[list[str]], mode: str, params: GenerationParams, iteration: int,
    system_prompt: str | None = None,
) -> list[Run]:
    """One mode through every chat, turn by turn; each answer goes into the chat as the model gave it."""
    start_fresh(pair)
    runs: list[Run] = []
    for c, chat in enumerate(chats):
        messages: list[dict[str, str]] = []
        for t, text in enumerate(chat):
            messages.append({"role": "user", "content": text})
            measured = measure_ours(pair, list(messages), mode_params(mode, params), system_prompt)
            run = to_run(mode, len(runs), iteration, measured)
            run.category = f"chat {c + 1} turn {t + 1}"
            runs.append(run)
            messages.append({"role": "assistant", "content": measured.text})
    return runs


def run_conversation(
    pair: ModelPair,
    chats: list[list[str]],
    modes: list[str],
    params: GenerationParams,
    iterations: int = 1,
    system_prompt: str | None = None,
    on_run: Callable[[Run], None] | None = None,
) -> list[Run]:
    """Every mode through the chats, `iterations` times, standard first in each iteration."""
    for mode in modes:
        run_chats(pair, [chats[0][:1]], mode, warm_up(params), -1, system_prompt)
    runs: list[Run] = []
    for iteration in range(iterations):
        standard: dict[int, list[int]] = {}
        for mode in modes:
            for run in run_chats(pair, chats, mode, params, iteration, system_prompt):
                record(run, standard, params.greedy, runs, on_run)
    return runs


def _whole_chat_tps(runs: list[Run], mode: str, iteration: int) -> float | None:
    mine = [r for r in runs if r.mode == mode and r.iteration == iteration]
    seconds = sum(r.timed_s for r in mine if r.generation_tps > 0)
    return sum(r.timed_tokens for r in mine if r.generation_tps > 0) / seconds if seconds > 0 else None


def _whole_chat_speedup(runs: list[Run], mode: str) -> float | None:
    ratios = []
    for iteration in sorted({r.iteration for r in runs}):
        mine, standard = _whole_chat_tps(runs, mode, iteration), _whole_chat_tps(runs, "standard", iteration)
        if mine and standard:
            ratios.append(mine / standard)
    return statistics.median(ratios) if ratios else None


def summarize_conversation(runs: list[Run]) -> dict[str, dict[str, object]]:
    """`summarize`'s figures per mode, the speedup over the whole conversation, and each turn's figures."""
    summary = summarize(runs)
    for mode, figures in summary.items():
        figures["speedup_vs_standard"] = _whole_chat_speedup(runs, mode)
        turns = []
        for index in sorted({r.prompt_index for r in runs}):
            turn = summarize([r for r in runs if r.prompt_index == index and r.mode in ("standard", mode)])[mode]
            category = next(r.category for r in runs if r.prompt_index == index)
            turns.append({"turn": index, "category": category, **turn})
        figures["turns"] = turns
    return summary
