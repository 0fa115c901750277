"""A rank that dies mid-answer: the head names its Mac in one error line and every process ends (no hang)."""

from __future__ import annotations

import os
import signal

import pytest

from engine.distributed.local_launch import LocalRanks
from engine.distributed.transport import HOP_DELAY_ENV

from .conftest import GREEDY, ROOT, cli_rank

pytestmark = pytest.mark.distributed


def test_a_rank_killed_mid_answer_is_named_by_the_head_and_nothing_hangs(dense_models, tmp_path) -> None:
    target, _ = dense_models("qwen2")  # its greedy answer to this prompt runs to the token limit
    command = cli_rank("generate", "--hosts", str(tmp_path / "unused.json"), "--target", str(target),
                       "--prompt", "Tell me everything about the sea.", "--max-tokens", "400", *GREEDY)
    # A 20 ms hop keeps the answer going for seconds after its first token, whatever the machine's speed.
    with LocalRanks(command, 3, env={HOP_DELAY_ENV: "20", "PYTHONPATH": str(ROOT)}) as ranks:
        head, farthest = ranks.processes[0], ranks.processes[2]
        assert head.stdout is not None and head.stdout.read(1)  # the answer has begun
        os.kill(farthest.pid, signal.SIGKILL)  # rank 2: the first stage, two hops from the head
        results = ranks.wait(timeout=90)
    head_result = results[0]
    assert head_result.returncode == 1, head_result.stderr
    errors = [line for line in head_result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: Lost the Mac 127.0.0.1 (rank 2) mid-answer: its SpecChat process ended (killed, crashed or out of "
        "memory). Check it, then start again."
    ]
    assert "[ring]" not in head_result.stderr and "Traceback" not in head_result.stderr
    assert results[1].returncode == 1  # the middle rank lost its neighbour and left too
