"""Prompt lookup against standard decoding on one rank and pipelined across two (issue 26), ratios in one run.

Every configuration answers the same prompts greedily in both modes (lookup at a fixed K = 4, so that every
configuration drafts the same tokens), the modes taking turns on each prompt, after
a warm-up answer in each; its figure is each mode's tokens over its seconds, and the ratio lookup / standard is
within that configuration. One rank runs in one process pinned to one core; two ranks run on loopback with a
core each (engine/distributed/local_launch.py), with an emulated delay before every hop (the head's message and
the activations: two hops per target pass) of 0 ms and of each `--delays` value.

    python -m tests.benchmarks.pipeline --target T [--prompts resources/prompts/benchmark.json] \
        [--categories code-editing] [--max-tokens 96] [--answers 4] [--delays 2,10]

Then the cost model's per-pass latency term (`cost_model.pipelined_speedup`) predicts other links from what
lookup measured here: its tokens per pass E and the cost of its passes in standard steps.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

LOOKUP_K = 4


def measure(pair, prompts: list[str], max_tokens: int, waited=lambda: 0.0) -> dict:
    """Both modes on every prompt, taking turns; per mode its tokens, seconds (generating; and in all, with the
    prompt), target passes, and the seconds `waited()` grew by (the head's time in collectives)."""
    from engine import GenerationParams, generate

    # A fixed K: the adaptive policy would pick K from timings, and the drafts would differ between configurations.
    modes = {"standard": {"mode": "standard"}, "lookup": {"drafter": "lookup", "history": False, "adaptive": False,
                                                          "num_draft": LOOKUP_K}}
    totals = {mode: {"tokens": 0, "seconds": 0.0, "total_s": 0.0, "waited_s": 0.0, "passes": 0} for mode in modes}
    outputs: dict[str, list[list[int]]] = {mode: [] for mode in modes}
    for settings in modes.values():  # warm-up
        generate(prompts[0], pair, GenerationParams.preset("greedy", max_tokens=8, **settings), chat=True)
    for i, prompt in enumerate(prompts):
        for mode in (list(modes) if i % 2 == 0 else list(reversed(modes))):
            pair.reset_caches()  # every answer prefills its prompt: the modes pay alike
            before = waited()
            result = generate(prompt, pair, GenerationParams.preset("greedy", max_tokens=max_tokens, **modes[mode]),
                              chat=True)
            totals[mode]["waited_s"] += waited() - before
            totals[mode]["total_s"] += result.stats.total_s
            totals[mode]["tokens"] += len(result.tokens)
            totals[mode]["seconds"] += result.stats.generation_s
            totals[mode]["passes"] += result.stats.rounds
            outputs[mode].append(result.tokens)
    totals["identical"] = outputs["standard"] == outputs["lookup"]
    return totals


def run_rank(args: argparse.Namespace) -> None:
    """One process of a configuration: the head (or the only rank) prints its figures as JSON."""
    prompts = json.loads(args.prompt_list)
    if "MLX_RANK" not in os.environ:
        from engine import ModelPair

        print(json.dumps(measure(ModelPair.load(args.target), prompts, args.max_tokens)))
        return
    from engine.distributed.cluster import start

    session = start(args.target)
    if session is None:
        return
    with session:
        figures = measure(session.pair, prompts, args.max_tokens, lambda: session.transport.seconds)
    figures["ranks"] = len(session.split)
    print(json.dumps(figures))


def configuration(args: argparse.Namespace, prompts: list[str], ranks: int, delay_ms: float) -> dict:
    """Run one configuration in fresh processes; the head's figures."""
    from engine.distributed.cores import pin_to_core
    from engine.distributed.local_launch import run_ranks
    from engine.distributed.transport import HOP_DELAY_ENV

    command = [sys.executable, "-m", "tests.benchmarks.pipeline", "--rank", "--target", args.target,
               "--max-tokens", str(args.max_tokens), "--prompt-list", json.dumps(prompts)]
    if ranks == 1:
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, preexec_fn=lambda: pin_to_core(0))
        return json.loads(done.stdout.strip().splitlines()[-1])
    results = run_ranks(command, ranks, timeout=3600, env={HOP_DELAY_ENV: str(delay_ms), "PYTHONPATH": str(ROOT)})
    if results[0].returncode != 0:
        raise SystemExit(results[0].stderr)
    return json.loads(results[0].stdout.strip().splitlines()[-1])


def report(rows: list[tuple[str, dict]]) -> None:
    """The table, and the latency term's prediction from the single-rank figures."""
    from engine.decoding.policy.cost_model import pipelined_speedup

    print("| configuration | standard tok/s | lookup tok/s | lookup / standard | lookup tokens per pass | head waiting on the ring |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, f in rows:
        std, look = (f[m]["tokens"] / f[m]["seconds"] for m in ("standard", "lookup"))
        per_pass = f["lookup"]["tokens"] / f["lookup"]["passes"]
        waited = sum(f[m]["waited_s"] for m in ("standard", "lookup")) / sum(f[m]["total_s"] for m in ("standard", "lookup"))
        share = f"{waited:.0%}" if "ranks" in f else "-"
        print(f"| {name} | {std:.1f} | {look:.1f} | {look / std:.2f}x | {per_pass:.2f} | {share} |"
              + ("" if f["identical"] else " (outputs differ!)"))
    one = rows[0][1]
    e = one["lookup"]["tokens"] / one["lookup"]["passes"]
    step = one["standard"]["seconds"] / one["standard"]["tokens"]
    cost = one["lookup"]["seconds"] / one["lookup"]["passes"] / step  # a lookup pass in standard steps
    print(f"\ncost model from the 1-rank run: E = {e:.2f} tokens per pass, a lookup pass = {cost:.2f} steps "
          f"({step * 1000:.1f} ms a step)")
    for label, latency_steps in (("L = 0", 0.0), ("L = 0.1 step", 0.1), ("L = 1 step", 1.0), ("L = 10 steps", 10.0)):
        print(f"  predicted lookup / standard at {label}: {pipelined_speedup(e, cost, latency_steps):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--prompts", default=str(ROOT / "resources/prompts/benchmark.json"))
    parser.add_argument("--categories", default="code-editing")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--answers", type=int, default=4, help="prompts per configuration (cycling through them)")
    parser.add_argument("--delays", default="2,10", help="emulated per-hop delays in ms, besides 0")
    parser.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--prompt-list", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank:
        run_rank(args)
        return
    chosen = [p["prompt"] for p in json.loads(Path(args.prompts).read_text())
              if not args.categories or p["category"] in args.categories.split(",")]
    prompts = [chosen[i % len(chosen)] for i in range(args.answers)]
    configs = [("1 rank", 1, 0.0), ("2 ranks, loopback", 2, 0.0)]
    configs += [(f"2 ranks, {d} ms a hop", 2, float(d)) for d in args.delays.split(",") if d]
    rows = []
    for name, ranks, delay in configs:
        start = time.perf_counter()
        rows.append((name, configuration(args, prompts, ranks, delay)))
        print(f"{name}: done in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    report(rows)


if __name__ == "__main__":
    main()
