"""The draft cost c of the drafters that read the target's hidden states: one draft step's time over one target step's.

    .venv/bin/python -m tests.benchmarks.drafter_cost [--steps 200] [--no-sized]

MTP heads on the tiny targets of engine/fixtures/tiny_drafters.py (a Qwen3.5 hybrid and a MiMo), and EAGLE-3 on
the tiny pair of engine/fixtures/tiny_eagle3.py: the median time of a target step (one token after a 40-token
context, read back) and of one chained draft step (the drafter's pass and its LM head, read back), alternating;
and, from an answer at K = 4, c as the adaptive policy measures it (timed rounds' draft seconds per token over
plain steps' seconds). On tiny models the per-call overhead of MLX and Python dominates both, so c there is far
above the weight ratio that sets it on an Apple GPU. So EAGLE-3 is also timed at a real size: a random target of
Qwen3-0.6B's shape (28 layers, 1024 wide, 151,936 ids) with a random EAGLE-3 drafter for it (one layer, a
32,000-id draft vocabulary), in float32 on the CPU (about 3 GB).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import mlx.core as mx
from mlx.utils import tree_flatten

from engine.decoding.cached_model import CachedModel
from engine.decoding.generation import generate_stream
from engine.decoding.pair import ModelPair
from engine.events import RoundEvent
from engine.fixtures.tiny_drafters import build_mtp_target
from engine.fixtures.tiny_eagle3 import build_eagle3_pair
from engine.models.loading import load_model
from engine.params import GenerationParams

CONTEXT = [1, 2, 3, 4, 5, 6, 7] * 6


def step_times(target_model, runner, steps: int) -> tuple[float, float]:
    """Median seconds of a target step and of a chained draft step of `runner` (an MTP head's or EAGLE-3's)."""
    target = CachedModel(target_model)
    target.forward(mx.array(CONTEXT, dtype=mx.uint32), ids=CONTEXT)
    hidden_size = runner.head.fc.weight.shape[0]
    runner.feed(mx.zeros((len(CONTEXT) - 1, hidden_size)), mx.array(CONTEXT[1:]))  # the drafter holds the context too
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


def policy_cost(pair: ModelPair, drafter: str) -> float:
    """c as the round measures it: timed rounds' draft seconds per token over plain steps' verify seconds."""
    params = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=200, drafter=drafter, num_draft=4, adaptive=False)
    rounds = [e for e in generate_stream(pair, "abcabd", params) if isinstance(e, RoundEvent)]
    draft = statistics.median(r.draft_s / r.drafted for r in rounds if r.timed and r.drafted)
    plain = [e for e in generate_stream(pair, "abcabdg", params.replace(mode="standard")) if isinstance(e, RoundEvent)]
    return draft / statistics.median(r.verify_s for r in plain[1:])


def report(name: str, pair: ModelPair, runner, steps: int, drafter: str) -> None:
    target_s, draft_s = step_times(pair.target.model, runner, steps)
    print(f"{name:14} target step {target_s * 1e3:7.3f} ms  draft step {draft_s * 1e3:7.3f} ms  "
          f"c = {draft_s / target_s:.2f}  (in rounds: c = {policy_cost(pair, drafter):.2f})")


def sized_eagle3(steps: int) -> None:
    """EAGLE-3 against a random target of Qwen3-0.6B's shape (see the module doc)."""
    from mlx_lm.utils import _get_classes

    from engine.drafters.eagle3_model import DraftVocabulary, Eagle3Config, Eagle3Model, Eagle3Runner

    config = {"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 28, "intermediate_size": 3072,
              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
              "rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 4096, "tie_word_embeddings": True}
    model_class, args_class = _get_classes(config)
    target = model_class(args_class.from_dict(config))
    draft = Eagle3Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=1, num_attention_heads=16,
                         num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-6, vocab_size=151936,
                         draft_vocab_size=32000, target_hidden_size=1024, qk_norm=True, norm_before_residual=True)
    drafter = Eagle3Model(draft)
    mx.eval(target.parameters(), drafter.parameters())
    vocabulary = DraftVocabulary(mx.arange(32000) * 4, 151936)
    runner = Eagle3Runner(drafter, target, vocabulary, ((2, "input"), (14, "input"), (25, "input")))
    target_s, draft_s = step_times(target, runner, steps)
    share = sum(v.size for _, v in tree_flatten(drafter.parameters())) / sum(v.size for _, v in tree_flatten(target.parameters()))
    print(f"{'eagle3 0.6B':14} target step {target_s * 1e3:7.3f} ms  draft step {draft_s * 1e3:7.3f} ms  "
          f"c = {draft_s / target_s:.2f}  (weights: {share:.2f} of the target's)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--no-sized", action="store_true", help="skip the Qwen3-0.6B-sized EAGLE-3 timing")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="drafter-cost-"))
    for kind in ("hybrid", "dense"):
        pair = ModelPair(load_model(str(build_mtp_target(root, kind))))
        report(f"mtp {kind}", pair, pair.drafter_state("mtp").runner, args.steps, "mtp")
    target, drafter = build_eagle3_pair(root)
    pair = ModelPair(load_model(str(target)))
    pair.set_drafter("eagle3", drafter)
    report("eagle3 tiny", pair, pair.drafter_state("eagle3").runner, args.steps, "eagle3")
    if not args.no_sized:
        sized_eagle3(args.steps)


if __name__ == "__main__":
    main()
