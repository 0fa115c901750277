"""How far lenient acceptance moves the output from the target's distribution, and what it buys in acceptance.

    .venv/bin/python -m tests.benchmarks.lenience_drift TARGET DRAFT [--temps 0.7,1.0] [--prompts 8]

For the first answer token of each bundled benchmark prompt (chat template applied), it takes the target's p and
the draft's q after warping (top-p 1), and computes exactly, per lenience δ:
    acceptance  sum_x q(x) min(1, p(x) / ((1 - δ) q(x)))   (the chance a draft token is kept)
    drift       TV(lenient output, p) = 1/2 sum_x |out(x) - p(x)|, out = `acceptance.lenient_output`
averaged over the prompts. Exact sums over the whole vocabulary, no sampling.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import mlx.core as mx

from engine.decoding.acceptance import lenient_output, ratio
from engine.decoding.cached_model import CachedModel
from engine.decoding.pair import ModelPair
from engine.decoding.sampling import Warper
from engine.models.app_paths import RESOURCES
from engine.params import GenerationParams

LENIENCES = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)


def first_token_probs(pair: ModelPair, prompt_ids: list[int], warper: Warper) -> tuple[mx.array, mx.array]:
    """(p, q): the target's and the draft's warped distributions of the first answer token."""
    rows = []
    for model in (pair.target.model, pair.draft.model):
        logits = CachedModel(model).forward(mx.array(prompt_ids, dtype=mx.uint32), ids=prompt_ids)[-1:]
        rows.append(mx.exp(warper.logprobs(warper.fit_width(logits)))[0])
    return rows[0], rows[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("draft")
    parser.add_argument("--temps", default="0.7,1.0")
    parser.add_argument("--prompts", type=int, default=8)
    args = parser.parse_args()
    pair = ModelPair.load(args.target, args.draft)
    prompts = [e["prompt"] for e in json.loads((RESOURCES / "prompts" / "benchmark.json").read_text())][: args.prompts]
    print(f"{'T':>4} {'lenience':>9} {'acceptance':>11} {'TV drift':>9}")
    for temperature in (float(t) for t in args.temps.split(",")):
        warper = Warper(GenerationParams(temperature=temperature, top_p=1.0), pair.vocab_width)
        pq = [first_token_probs(pair, pair.prompt_ids(p), warper) for p in prompts]
        for lenience in LENIENCES:
            accept = [float((q * ratio(p, q, lenience)).sum()) for p, q in pq]
            drift = [0.5 * float(mx.abs(lenient_output(p, q, lenience) - p).sum()) for p, q in pq]
            print(f"{temperature:4.1f} {lenience:9.2f} {sum(accept) / len(accept):11.3f} {sum(drift) / len(drift):9.4f}")


if __name__ == "__main__":
    main()
