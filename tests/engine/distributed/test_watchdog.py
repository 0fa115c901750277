"""A Mac cut off mid-answer (frozen, not dead: its connections stay open): the head gives up with one line."""

from __future__ import annotations

import os
import signal

import pytest

from engine.distributed.local_launch import LocalRanks
from engine.distributed.transport import HOP_DELAY_ENV

from .commands import GREEDY, ROOT, cli_rank

pytestmark = pytest.mark.distributed


def test_a_frozen_rank_ends_the_head_after_the_timeout_with_one_line(dense_models, tmp_path) -> None:
    target, _ = dense_models("qwen2")
    command = cli_rank("generate", "--hosts", str(tmp_path / "unused.json"), "--target", str(target),
                       "--prompt", "Tell me everything about the sea.", "--max-tokens", "400", *GREEDY)
    env = {HOP_DELAY_ENV: "20", "SPECCHAT_PIPELINE_TIMEOUT_S": "3", "PYTHONPATH": str(ROOT)}
    with LocalRanks(command, 2, env=env) as ranks:
        head, worker = ranks.processes
        assert head.stdout is not None and head.stdout.read(1)  # the answer has begun
        os.kill(worker.pid, signal.SIGSTOP)  # frozen: its sockets stay open, so the ring reports nothing
        try:
            head.wait(timeout=60)
        finally:
            os.kill(worker.pid, signal.SIGKILL)
        results = ranks.wait(timeout=30)
    assert results[0].returncode == 1
    errors = [line for line in results[0].stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: No answer from 127.0.0.1 (rank 1) for 3 s: a Mac is cut off or frozen. Check the network and the "
        "Macs, then start again."
    ]
