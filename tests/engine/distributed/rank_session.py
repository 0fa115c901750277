"""Run on every rank by the pipeline tests: a two-turn chat and a Regenerate in every mode, greedy, printed as JSON
by the head.

    python rank_session.py TARGET DRAFT  (started by engine.distributed.local_launch with MLX_RANK/MLX_HOSTFILE)

The head prints one JSON object: {"split": [...], "tokens": {mode: [turn 1, turn 2, turn 2 again]}, "counts": {mode:
{"drafted", "accepted"}}}; the modes share
the pair's caches, so later modes and turns start from what earlier ones left (trims and rewinds included).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from engine.decoding.generation import generate
from engine.distributed.cluster import start
from engine.params import GenerationParams

TURNS = ["Write a short story about a fox.", "Now tell it again, shorter."]
MODES = {
    "standard": {"mode": "standard"},
    "model": {"drafter": "model", "adaptive": False, "num_draft": 3},
    "lookup": {"drafter": "lookup", "history": False, "adaptive": False, "num_draft": 4},
}
MAX_TOKENS = 24


def chat(pair, settings: dict) -> tuple[list[list[int]], dict[str, int]]:
    """Two turns of one conversation, then a Regenerate of the second: each answer's ids, and the draft tokens
    verified and accepted in all."""
    params = GenerationParams.preset("greedy", max_tokens=MAX_TOKENS, **settings)
    messages: list[dict] = []
    answers, counts = [], {"drafted": 0, "accepted": 0}
    for asked in [*TURNS, None]:  # None: answer the last question again (the caches go back past the answer)
        if asked is None:
            messages.pop()
        else:
            messages.append({"role": "user", "content": asked})
        result = generate(messages, pair, params)
        messages.append({"role": "assistant", "content": result.text})
        answers.append(result.tokens)
        counts["drafted"] += result.stats.drafted
        counts["accepted"] += result.stats.accepted
    return answers, counts


def main() -> None:
    session = start(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    if session is None:
        return
    with session:
        runs = {name: chat(session.pair, settings) for name, settings in MODES.items()}
    tokens = {name: answers for name, (answers, _) in runs.items()}
    counts = {name: counts for name, (_, counts) in runs.items()}
    print(json.dumps({"split": session.split, "tokens": tokens, "counts": counts}))


if __name__ == "__main__":
    main()
