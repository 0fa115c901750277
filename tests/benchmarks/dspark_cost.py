"""The DSpark draft cost c: one block pass and its Markov steps, in target steps (docs/design.md's cost model).

    .venv/bin/python -m tests.benchmarks.dspark_cost [--repeats 200]

Measured as DFlash's (`dflash_cost.py`: same context, same alternation, median of the repeats) on the tiny
fixtures (engine/fixtures/tiny_dspark.py: a 4-layer target, a 2-layer drafter, width 64, blocks of 7) and on
random models in the proportions of DeepSeek's published pair (Qwen3-8B: 36 layers; deepseek-ai/
dspark_qwen3_8b_block7: 5 layers tapping 5, blocks of 7, a Markov head of rank hidden / 16 and its own embedding
table and LM head, at a width of 512 so that it runs here). Also printed: v(8), the verify pass over a whole block
and the token before it, in target steps.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import mlx.core as mx
from mlx.utils import tree_map
from mlx_lm.utils import _get_classes

from engine.drafters.dspark import DSparkRunner, load_dspark, parse_dspark_config
from engine.drafters.dspark_model import DSparkModel
from engine.fixtures.tiny_dflash import target_config
from engine.fixtures.tiny_dspark import build_dspark_pair, drafter_config
from engine.models.loading import load_model
from tests.benchmarks.dflash_cost import costs

SHARED = {"embed_tokens.weight", "lm_head.weight"}  # DeepSeek's heads ship both


def tiny_pair(root: Path) -> tuple[Any, DSparkRunner]:
    target_dir, drafter_dir = build_dspark_pair(root, "qwen3")
    target = load_model(str(target_dir)).model
    return target, DSparkRunner(load_dspark(drafter_dir), target)


def proportioned_pair(width: int = 512) -> tuple[Any, DSparkRunner]:
    """Random Qwen3-8B / dspark_qwen3_8b_block7 proportions at `width`, in float32 as the engine computes on the CPU."""
    shape = {"hidden_size": width, "intermediate_size": 3 * width, "num_attention_heads": width // 64,
             "num_key_value_heads": width // 256, "head_dim": 64, "vocab_size": 4096}
    config = {**target_config("qwen3"), **shape, "num_hidden_layers": 36}
    model_class, args_class = _get_classes(config)
    target = model_class(args_class.from_dict(config))
    draft = drafter_config(config) | shape | {"num_hidden_layers": 5, "layer_types": ["full_attention"] * 5,
                                              "target_layer_ids": [1, 9, 17, 25, 33], "markov_rank": width // 16}
    model = DSparkModel(parse_dspark_config(draft, SHARED))
    for m in (target, model):
        m.update(tree_map(lambda p: p.astype(mx.float32), m.parameters()))
        mx.eval(m.parameters())
    return target, DSparkRunner(model, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        for name, pair in (("tiny fixture (width 64)", tiny_pair(Path(root))),
                           ("Qwen3-8B proportions (width 512)", proportioned_pair())):
            c, verify = costs(*pair, args.repeats, verify_width=8)
            print(f"{name}: c = {c:.2f} target steps per block of 7; v(8) = {verify:.2f}")


if __name__ == "__main__":
    main()
