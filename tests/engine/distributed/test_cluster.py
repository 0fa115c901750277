"""The pipelined target with real processes on loopback (MLX's ring backend): the same greedy tokens as one process.

Each case starts 2 or 3 ranks of `rank_session.py` (engine/distributed/local_launch.py), which chats two turns
and regenerates the second in standard, draft-model and lookup modes on one pair (caches carried from mode to
mode and turn to turn), and compares every answer with single-process standard decoding of the same chat.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from engine.decoding.pair import ModelPair
from engine.distributed.layer_split import MEMORY_ENV
from engine.distributed.local_launch import run_ranks

from . import rank_session

pytestmark = pytest.mark.distributed
SESSION = Path(rank_session.__file__)


def single_process(target: Path) -> list[list[int]]:
    """The chat's answers from standard decoding in this process: the reference."""
    answers, _ = rank_session.chat(ModelPair.load(str(target)), {"mode": "standard"})
    return answers


def run_session(target: Path, draft: Path, size: int, memory_gb: list[float] | None = None) -> dict:
    """Run `rank_session.py` on `size` loopback ranks; the head's JSON (every rank must end with status 0)."""
    rank_env = {r: {MEMORY_ENV: str(gb)} for r, gb in enumerate(memory_gb)} if memory_gb else None
    results = run_ranks([sys.executable, str(SESSION), str(target), str(draft)], size, timeout=240, rank_env=rank_env)
    assert [r.returncode for r in results] == [0] * size, [r.stderr[-2000:] for r in results]
    return json.loads(results[0].stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "family, memory_gb, split",
    [
        ("qwen2", [1, 3], [1, 3]),  # the head states less free memory: it gets fewer layers
        ("llama", [3, 1], [3, 1]),
        ("qwen2", [2, 1, 1], [2, 1, 1]),
        ("llama", [1, 1, 2], [1, 1, 2]),
    ],
)
def test_pipelined_answers_equal_single_process_standard_decoding(dense_models, family: str, memory_gb, split) -> None:
    target, draft = dense_models(family)
    reference = single_process(target)
    out = run_session(target, draft, len(memory_gb), memory_gb)
    assert out["split"] == split
    assert reference[2] == reference[1]  # greedy: the regenerated answer is the same
    for mode in rank_session.MODES:
        assert out["tokens"][mode] == reference, mode
    assert out["counts"]["model"]["accepted"] > 0  # drafts crossed the pipeline and were accepted ...
    assert out["counts"]["model"]["drafted"] > out["counts"]["model"]["accepted"]  # ... and rejected (ranks trimmed)
    assert out["counts"]["lookup"]["accepted"] > 0
