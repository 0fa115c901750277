"""How long a Stop waits while a long prompt is read: every prefill chunk's seconds, in chunks of one fixed size and in
chunks that shrink as the context grows (`engine/decoding/cached_model.py` `prefill_chunk_length`), on one model in
one run (not run by the suite):

    PYTHONPATH=. .venv/bin/python -m tests.benchmarks.prefill_chunks --model PATH --tokens 12288
    PYTHONPATH=. .venv/bin/python -m tests.benchmarks.prefill_chunks --model PATH --tokens 1536 --steps 512,256,128 --rules shrinking

A cancel (the app's Stop, a client gone from the server) lands between chunks, so the longest chunk is the longest
wait. Each rule, at each first-chunk size (`--steps`), reads the same random ids into a fresh cache, one after the
other, twice (fixed, shrinking, fixed, shrinking); each line reports the longest chunk as a multiple of that run's first chunk, the run's whole time, and
the context at which attention costs what the weights do on this machine, fitted to its chunks (`equal_cost_context`
is that value's estimate).
"""

from __future__ import annotations

import argparse
import random
import time

from engine.decoding.cached_model import CachedModel
from engine.decoding.pair import ModelPair

FIXED = 10**15  # an equal-cost context no prompt reaches: every chunk the full step, as before the rule


def chunk_seconds(cache: CachedModel, context: list[int]) -> list[tuple[int, int, float]]:
    """(position before, tokens, seconds) of each chunk `catch_up_steps` reads `context` in, from an empty cache."""
    cache.reset()
    timings: list[tuple[int, int, float]] = []
    steps = cache.catch_up_steps(context)
    position, _ = next(steps)
    while True:
        start = time.perf_counter()
        try:
            reached, _ = next(steps)
        except StopIteration:
            return timings
        timings.append((position, reached - position, time.perf_counter() - start))
        position = reached


def fitted_equal_cost(timings: list[tuple[int, int, float]]) -> float:
    """The context at which a token's attention costs what its weights do, here: a least-squares line through each
    chunk's seconds per token against its middle position (a + b * position), and a / b."""
    points = [(position + tokens / 2, seconds / tokens) for position, tokens, seconds in timings]
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    return (mean_y - slope * mean_x) / slope if slope > 0 else float("inf")


def report(rule: str, timings: list[tuple[int, int, float]]) -> str:
    """One line: chunks, whole time, first chunk, the longest chunk as a multiple of the first, the fitted context."""
    first = timings[0][2]
    at, _, longest = max(timings, key=lambda t: t[2])
    total = sum(t[2] for t in timings)
    return (f"{rule:14} {len(timings):4} chunks  {total:7.1f} s in all  first {first:5.2f} s  longest {longest:5.2f} s "
            f"= {longest / first:4.2f}x the first (from position {at})  equal cost at {fitted_equal_cost(timings):.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a model folder or id")
    parser.add_argument("--tokens", type=int, default=12288, help="the prompt's length")
    parser.add_argument("--steps", default="512", help="prefill_step_size: the first chunk's tokens, comma-separated")
    parser.add_argument("--rules", default="fixed,shrinking", help="chunk rules to time, comma-separated")
    args = parser.parse_args()
    pair = ModelPair.load(args.model)
    cache = pair.target_cache
    equal_costs = {"fixed": FIXED, "shrinking": cache.equal_cost_context}
    vocab = int(pair.target.tokenizer.vocab_size)
    rng = random.Random(7)
    context = [rng.randrange(vocab) for _ in range(args.tokens)]
    print(f"{args.model}: {args.tokens} tokens, equal-cost context {equal_costs['shrinking']}")
    for _ in range(2):
        for step in (int(s) for s in args.steps.split(",")):
            for rule in args.rules.split(","):
                cache.prefill_step_size, cache.equal_cost_context = step, equal_costs[rule]
                print(report(f"{rule} {step}", chunk_seconds(cache, context)), flush=True)


if __name__ == "__main__":
    main()
