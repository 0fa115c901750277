"""The draft cost c of a target's built-in MTP head: one draft step's time over one target step's.

    .venv/bin/python -m tests.benchmarks.drafter_cost [--steps 200]

On the tiny targets of engine/fixtures/tiny_drafters.py (a Qwen3.5 hybrid and a MiMo): the median time of a target
step (one token after a 40-token context, read back) and of one chained MTP draft step (the head's pass and the
shared LM head, read back), alternating; and, from an answer with the MTP drafter at K = 4, c as the adaptive policy
measures it (timed rounds' draft seconds per token over plain steps' seconds). On tiny models the per-call
overhead of MLX and Python dominates both, so c here is far above the weight ratio that sets it on an Apple GPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import mlx.core as mx  # noqa: E402

from engine.decoding.cached_model import CachedModel  # noqa: E402
from engine.decoding.generation import generate_stream  # noqa: E402
from engine.decoding.pair import ModelPair  # noqa: E402
from engine.events import RoundEvent  # noqa: E402
from engine.fixtures.tiny_drafters import build_mtp_target  # noqa: E402
from engine.models.loading import load_model  # noqa: E402
from engine.params import GenerationParams  # noqa: E402

CONTEXT = [1, 2, 3, 4, 5, 6, 7] * 6


def step_times(kind: str, root: Path, steps: int) -> tuple[float, float]:
    """Median seconds of a target step and of an MTP draft step."""
    pair = ModelPair(load_model(str(build_mtp_target(root, kind))))
    runner = pair.mtp_state().runner
    target = CachedModel(pair.target.model)
    target.forward(mx.array(CONTEXT, dtype=mx.uint32), ids=CONTEXT)
    hidden_size = runner.head.fc.weight.shape[0]
    runner.feed(mx.zeros((len(CONTEXT) - 1, hidden_size)), mx.array(CONTEXT[1:]))  # the head holds the context too
    output = mx.zeros((1, hidden_size))
    target_s, draft_s = [], []
    token = mx.array([3], dtype=mx.uint32)
    for _ in range(steps):
        start = time.perf_counter()
        logits = target.forward(token, ids=[3])
        mx.eval(mx.argmax(logits, axis=-1))
        target_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        output = runner.feed(output, token)
        mx.eval(mx.argmax(runner.logits(output), axis=-1))
        draft_s.append(time.perf_counter() - start)
    return statistics.median(target_s), statistics.median(draft_s)


def policy_cost(kind: str, root: Path) -> float:
    """c as the round measures it: timed rounds' draft seconds per token over plain steps' verify seconds."""
    pair = ModelPair(load_model(str(build_mtp_target(root, kind))))
    params = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=200, drafter="mtp", num_draft=4, adaptive=False)
    rounds = [e for e in generate_stream(pair, "abcabd", params) if isinstance(e, RoundEvent)]
    draft = statistics.median(r.draft_s / r.drafted for r in rounds if r.timed and r.drafted)
    plain = [e for e in generate_stream(pair, "abcabdg", params.replace(mode="standard")) if isinstance(e, RoundEvent)]
    return draft / statistics.median(r.verify_s for r in plain[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="drafter-cost-"))
    for kind in ("hybrid", "dense"):
        target_s, draft_s = step_times(kind, root, args.steps)
        print(f"{kind:7} target step {target_s * 1e3:6.3f} ms  MTP step {draft_s * 1e3:6.3f} ms  "
              f"c = {draft_s / target_s:.2f}  (in rounds: c = {policy_cost(kind, root):.2f})")


if __name__ == "__main__":
    main()
