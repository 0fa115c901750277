"""What the cost model of docs/design.md predicts for a Mac, from acceptance measured here.

Acceptance depends on the models and the prompts, not on the hardware, so the rates measured on this CPU
carry over. What differs is the cost side. On Apple GPUs decoding is memory-bound: verifying K+1 tokens reads
the weights once, so v(K) is close to 1, and a draft step costs about the draft's share of the bytes read.

    speedup(K) = E(a, K) / (K * c + v(K)),   E(a, K) = (1 - a^(K+1)) / (1 - a),   v(K) = 1 + slope * K

    .venv/bin/python -m tests.benchmarks.mac_prediction RESULTS_DIR [--draft-cost 0.1] [--slope 0.04]

Prompt lookup costs nothing to draft (c = 0), and its tokens per pass were measured directly, so for it the
prediction is tokens per pass / v(K) at the mean K its rounds used.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.decoding.drafting.ssd import SSD_LENGTHS
from engine.decoding.policy.cost_model import best_speedup, ssd_speedup


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", type=Path)
    parser.add_argument("--draft-cost", type=float, default=0.1, help="draft step / target step (0.5B vs 7B, 4-bit)")
    parser.add_argument("--slope", type=float, default=0.04, help="extra verify cost per draft token")
    parser.add_argument("--k", type=int, default=4, help="the draft length the ssd mode ran with")
    parser.add_argument("--fanout", type=int, default=3, help="the fan-out the ssd mode ran with")
    args = parser.parse_args()
    print(f"Mac cost assumptions: draft step = {args.draft_cost} target steps, v(K) = 1 + {args.slope} K")
    for path in sorted(args.results.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "summary" not in data:
            continue  # not a benchmark result (a prompt file)
        # Fixed K measures the draft's per-token acceptance without bias (adaptive drafts only where it pays).
        a = data["summary"].get("speculative", {}).get("acceptance_rate")
        if a is not None:
            k, speedup = best_speedup(a, args.draft_cost, args.slope)
            print(f"{path.stem:16} draft model, acceptance {a:.0%} at fixed K: predicted {speedup:.2f}x at K={k}")
        for category in data.get("categories", {}):
            runs = [r for r in data["runs"] if r["mode"] == "prompt-lookup" and r.get("category") == category]
            if not runs or all(r["acceptance_rate"] is None for r in runs):
                continue
            per_pass = sum(r["tokens_per_pass"] for r in runs) / len(runs)
            drafted = [r["acceptance_rate"] for r in runs if r["acceptance_rate"] is not None]
            a_lookup = sum(drafted) / len(drafted)
            k_mean = max(per_pass - 1, 0) / max(a_lookup, 1e-9)
            print(f"{path.stem:16} prompt lookup, {category:13} measured {per_pass:.2f} tokens/pass: "
                  f"predicted {per_pass / (1 + args.slope * k_mean):.2f}x (or more: a cheaper verify drafts longer)")
        _predict_ssd(path.stem, data, args)
    for a in (0.55, 0.72, 0.78):
        k, speedup = best_speedup(a, args.draft_cost, args.slope)
        print(f"reference acceptance {a:.0%}: predicted {speedup:.2f}x at K={k}")
    return 0


def _predict_ssd(name: str, data: dict, args: argparse.Namespace) -> None:
    """SSD on a Mac: the fan-out hit rate measured here, the bounds of how much pre-drafting overlaps the verify."""
    ssd = data["summary"].get("ssd")
    a = data["summary"].get("speculative", {}).get("acceptance_rate")
    if not ssd or ssd.get("fanout_hit_rate") is None or a is None:
        return
    k, fanout = args.k, args.fanout
    hit = ssd["fanout_hit_rate"]
    sync = best_speedup(a, args.draft_cost, args.slope)[1]
    bounds = [ssd_speedup(a, args.draft_cost, args.slope, k, hit, SSD_LENGTHS * fanout * k, o) for o in (0.0, 1.0)]
    print(f"{name:16} SSD at K={k}, fan-out {fanout}, hit rate {hit:.0%}: predicted {bounds[0]:.2f}x (no overlap) to "
          f"{bounds[1]:.2f}x (full overlap); synchronous at its best K {sync:.2f}x")


if __name__ == "__main__":
    raise SystemExit(main())
