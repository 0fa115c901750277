"""The DFlash draft cost c: one block pass of the drafter, in target steps (DESIGN.md's cost model).

    .venv/bin/python -m tests.benchmarks.dflash_cost [--repeats 200]

Measured on the tiny fixtures (engine/fixtures/tiny_dflash.py: a 4-layer target, a 2-layer drafter, width 64)
and on random models in the proportions of a published pair (Qwen3-8B: 36 layers; z-lab/Qwen3-8B-DFlash-b16:
5 layers tapping 5, at a width of 512 so that it runs here). Each pass is timed with the context held at the same
length (the target's cache trimmed, the drafter rewound after each), the two alternating, median of the repeats.
Also printed: v(16), the verify pass over a whole block (16 tokens) in target steps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import mlx.core as mx  # noqa: E402
from mlx.utils import tree_map  # noqa: E402
from mlx_lm.models.cache import make_prompt_cache  # noqa: E402
from mlx_lm.utils import _get_classes  # noqa: E402

from engine.drafters.dflash import DFlashDrafter, layer_tap, load_dflash, parse_config  # noqa: E402
from engine.drafters.dflash_model import DFlashModel  # noqa: E402
from engine.fixtures.tiny_dflash import build_dflash_pair, drafter_config, target_config  # noqa: E402
from engine.models.loading import load_model  # noqa: E402

CONTEXT = 64


def seconds(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    mx.eval(run())
    return time.perf_counter() - start


def costs(target: Any, drafter: DFlashDrafter, repeats: int, verify_width: int = 16) -> tuple[float, float]:
    """(c, v(width)): a block pass and a verify of `verify_width` tokens (a whole DFlash block: 16), each over one
    target step, at a fixed context."""
    tap = layer_tap(target, drafter.config.target_layer_ids)
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


def tiny_pair(root: Path) -> tuple[Any, DFlashDrafter]:
    target_dir, drafter_dir = build_dflash_pair(root, "qwen3")
    target = load_model(str(target_dir)).model
    return target, DFlashDrafter(load_dflash(drafter_dir), target)


def proportioned_pair(width: int = 512) -> tuple[Any, DFlashDrafter]:
    """Random Qwen3-8B / Qwen3-8B-DFlash-b16 proportions (36 target layers, 5 drafter layers, 5 taps, 8 query
    heads per KV head... at `width`); weights in float32 as the engine computes on the CPU."""
    shape = {"hidden_size": width, "intermediate_size": 3 * width, "num_attention_heads": width // 64,
             "num_key_value_heads": width // 256, "head_dim": 64, "vocab_size": 4096}
    config = {**target_config("qwen3"), **shape, "num_hidden_layers": 36}
    model_class, args_class = _get_classes(config)
    target = model_class(args_class.from_dict(config))
    draft = drafter_config(config) | shape | {"num_hidden_layers": 5, "layer_types": ["full_attention"] * 5}
    draft["dflash_config"] = {**draft["dflash_config"], "target_layer_ids": [1, 9, 17, 25, 33]}
    model = DFlashModel(parse_config(draft, 1))
    for m in (target, model):
        m.update(tree_map(lambda p: p.astype(mx.float32), m.parameters()))
        mx.eval(m.parameters())
    return target, DFlashDrafter(model, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        for name, pair in (("tiny fixture (width 64)", tiny_pair(Path(root))), ("Qwen3-8B proportions (width 512)", proportioned_pair())):
            c, verify = costs(*pair, args.repeats)
            print(f"{name}: c = {c:.2f} target steps per block pass; v(16) = {verify:.2f}")


if __name__ == "__main__":
    main()
