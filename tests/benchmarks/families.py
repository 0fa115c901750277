"""One benchmark line per cache family: speculation against standard decoding on the tiny family models.

    .venv/bin/python -m tests.benchmarks.families [--tokens 160] [--iterations 3]

For each family (engine/fixtures/tiny_families.py): standard decoding, speculation with the draft equal to the
target (every draft accepted, so no rewinds), and speculation with the half-depth draft (partial acceptances,
so hybrid models return to snapshots and feed accepted tokens again). Greedy, fixed K = 4, all three alternating
in one process; speed is tokens per second after the first round, reported as ratios to standard decoding.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from engine.cli.benchmark import measure_ours
from engine.decoding.pair import ModelPair
from engine.fixtures.tiny_families import FAMILIES, build_family
from engine.models.loading import load_model
from engine.params import GenerationParams

PROMPT = "Tell me about speculative decoding and sliding windows in some detail, please, with examples."


def family_line(family: str, root: Path, tokens: int, iterations: int) -> str:
    target_dir, draft_dir = build_family(root, family)
    target, draft = load_model(str(target_dir)), load_model(str(draft_dir))
    pairs = {"standard": ModelPair(target), "draft=target": ModelPair(target, target), "half draft": ModelPair(target, draft)}
    greedy = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=tokens, num_draft=4, adaptive=False)
    ids = pairs["standard"].prompt_ids(PROMPT)
    tps: dict[str, list[float]] = {name: [] for name in pairs}
    per_pass: dict[str, float] = {}
    for _ in range(iterations + 1):  # the first round of runs warms up and is not counted
        for name, pair in pairs.items():
            pair.reset_caches()
            m = measure_ours(pair, ids, greedy.replace(mode="standard" if name == "standard" else "speculative"))
            tps[name].append(m.tps())
            per_pass[name] = len(m.token_ids) / m.rounds
    ratio = {name: statistics.median(t / s for t, s in zip(tps[name][1:], tps["standard"][1:])) for name in pairs}
    restores = pairs["half draft"].target_cache.rewinds["restored"]
    return (
        f"| {family} | {per_pass['draft=target']:.2f} | {ratio['draft=target']:.2f}x | "
        f"{per_pass['half draft']:.2f} | {ratio['half draft']:.2f}x | {restores} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=160)
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    print("| family | tokens/pass, draft = target | vs standard | tokens/pass, half-depth draft | vs standard | target restores |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as root:
        for family in FAMILIES:
            print(family_line(family, Path(root), args.tokens, args.iterations), flush=True)


if __name__ == "__main__":
    main()
