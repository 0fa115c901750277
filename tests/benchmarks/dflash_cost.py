"""The DFlash draft cost c: one block pass of the drafter, in target steps (docs/design.md's cost model).

    .venv/bin/python -m tests.benchmarks.dflash_cost [--repeats 200] [--no-sized]

Measured on the tiny fixtures (engine/fixtures/tiny_dflash.py: a 4-layer target, a 2-layer drafter, width 64), on
random models in the proportions of a published pair (Qwen3-8B: 36 layers; z-lab/Qwen3-8B-DFlash-b16: 5 layers
tapping 5, at a width of 512 so that it runs here), and at a real shape: a random target of Qwen3-0.6B's shape
(28 layers, 1024 wide, 151,936 ids, as the EAGLE-3 cost in drafter_cost.py) with a 5-layer DFlash drafter of its
width tapping layers 1, 7, 13, 19, 25 (z-lab's layout for a 28-layer target), in float32 on the CPU. Each pass is
timed with the context held at the same length (the target's cache trimmed, the drafter rewound after each), the
two alternating, median of the repeats. Also printed: v(16), the verify pass over a whole block (16 tokens) in
target steps; on the tiny pair, c as the round measures it (timed rounds' draft seconds over plain steps'); and
at the real shape, the bytes a block pass reads (the drafter's weights and the target's LM head it borrows) over
the target's, which is c where decoding is memory-bound (an Apple GPU).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.utils import _get_classes

from engine.decoding.generation import generate_stream
from engine.decoding.pair import ModelPair
from engine.drafters.dflash import DFlashRunner, layer_tap, load_dflash, parse_config
from engine.drafters.dflash_model import DFlashModel
from engine.events import RoundEvent
from engine.fixtures.tiny_dflash import build_dflash_pair, drafter_config, target_config
from engine.models.loading import load_model
from engine.params import GenerationParams

CONTEXT = 64


def seconds(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    mx.eval(run())
    return time.perf_counter() - start


def costs(target: Any, drafter: DFlashRunner, repeats: int, verify_width: int = 16) -> tuple[float, float]:
    """(c, v(width)): a block pass and a verify of `verify_width` tokens (a whole DFlash block: 16), each over one
    target step, at a fixed context."""
    tap = tapped_pass(target, drafter.config.target_layer_ids)
    cache = make_prompt_cache(target)
    _, hidden = tap(mx.array([[1 + i % 7 for i in range(CONTEXT)]]), cache)
    drafter.draft(1, hidden[:, :-1])
    times: dict[str, list[float]] = {"step": [], "block": [], "verify": []}
    runs = {
        "step": (lambda: target(mx.array([[3]]), cache=cache), lambda: [c.trim(1) for c in cache]),
        "verify": (lambda: target(mx.array([[3] * verify_width]), cache=cache), lambda: [c.trim(verify_width) for c in cache]),
        "block": (lambda: drafter.draft(2, hidden[:, -1:]).ids, lambda: drafter.rewind(CONTEXT - 1)),
    }
    for i in range(repeats + 10):
        for name, (run, undo) in runs.items():
            elapsed = seconds(run)
            undo()
            if i >= 10:
                times[name].append(elapsed)
    step = statistics.median(times["step"])
    return statistics.median(times["block"]) / step, statistics.median(times["verify"]) / step


def tiny_pair(root: Path) -> tuple[Any, DFlashRunner]:
    target_dir, drafter_dir = build_dflash_pair(root, "qwen3")
    target = load_model(str(target_dir)).model
    return target, DFlashRunner(load_dflash(drafter_dir), target)


def random_pair(target_shape: dict[str, Any], drafter_layers: int, taps: list[int]) -> tuple[Any, DFlashRunner]:
    """A random Qwen3 target of `target_shape` and a random DFlash drafter of its width; float32, as the engine
    computes on the CPU."""
    config = {**target_config("qwen3"), **target_shape}
    model_class, args_class = _get_classes(config)
    target = model_class(args_class.from_dict(config))
    draft = drafter_config(config) | {k: v for k, v in target_shape.items() if k != "num_hidden_layers"}
    draft |= {"num_hidden_layers": drafter_layers, "layer_types": ["full_attention"] * drafter_layers}
    draft["dflash_config"] = {**draft["dflash_config"], "target_layer_ids": taps}
    model = DFlashModel(parse_config(draft, 1))
    for m in (target, model):
        m.update(tree_map(lambda p: p.astype(mx.float32), m.parameters()))
        mx.eval(m.parameters())
    return target, DFlashRunner(model, target)


def proportioned_pair(width: int = 512) -> tuple[Any, DFlashRunner]:
    """Random Qwen3-8B / Qwen3-8B-DFlash-b16 proportions (36 target layers, 5 drafter layers, 5 taps, 8 query
    heads per KV head... at `width`)."""
    shape = {"hidden_size": width, "intermediate_size": 3 * width, "num_attention_heads": width // 64,
             "num_key_value_heads": width // 256, "head_dim": 64, "vocab_size": 4096, "num_hidden_layers": 36}
    return random_pair(shape, 5, [1, 9, 17, 25, 33])


def sized_pair() -> tuple[Any, DFlashRunner]:
    """A random target of Qwen3-0.6B's shape and a 5-layer DFlash drafter for it (see the module doc)."""
    shape = {"hidden_size": 1024, "intermediate_size": 3072, "num_attention_heads": 16, "num_key_value_heads": 8,
             "head_dim": 128, "vocab_size": 151936, "num_hidden_layers": 28, "tie_word_embeddings": True}
    return random_pair(shape, 5, [1, 7, 13, 19, 25])


def byte_share(target: Any, drafter: DFlashRunner) -> float:
    """Weights a block pass reads (the drafter's own and the LM head it borrows) over the target's."""
    def size(module: Any) -> int:
        return sum(v.size for _, v in tree_flatten(module.parameters()))

    head = drafter.head.embed_tokens.weight.size  # tied: the LM head is the embedding table
    return (size(drafter.model) + head) / size(target)


def round_cost(root: Path) -> float:
    """c as the round measures it on the tiny pair: timed rounds' draft seconds (one block pass, with the
    accepted positions fed) over the median plain step."""
    target_dir, drafter_dir = build_dflash_pair(root, "qwen3")
    pair = ModelPair(load_model(str(target_dir)))
    pair.set_drafter("dflash", drafter_dir)
    params = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=200, drafter="dflash", num_draft=15, adaptive=False)
    rounds = [e for e in generate_stream(pair, "abcabd", params) if isinstance(e, RoundEvent)]
    draft = statistics.median(r.draft_s for r in rounds if r.timed and r.drafted)
    plain = [e for e in generate_stream(pair, "abcabdg", params.replace(mode="standard")) if isinstance(e, RoundEvent)]
    return draft / statistics.median(r.verify_s for r in plain[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--no-sized", action="store_true", help="skip the Qwen3-0.6B-shaped pair (about 3 GB)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        pairs = {"tiny fixture (width 64)": lambda: tiny_pair(Path(root)),
                 "Qwen3-8B proportions (width 512)": proportioned_pair}
        if not args.no_sized:
            pairs["Qwen3-0.6B shape (width 1024)"] = sized_pair
        for name, make in pairs.items():
            target, drafter = make()
            c, verify = costs(target, drafter, args.repeats)
            print(f"{name}: c = {c:.2f} target steps per block pass; v(16) = {verify:.2f}; "
                  f"bytes read {byte_share(target, drafter):.2f} of the target's", flush=True)
        print(f"tiny fixture, in rounds: c = {round_cost(Path(root) / 'rounds'):.2f}")


if __name__ == "__main__":
    main()
