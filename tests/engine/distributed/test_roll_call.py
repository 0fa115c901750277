"""A rank that dies mid-answer: the head names its Mac in one error line and every process ends (no hang)."""

from __future__ import annotations

import json
import os
import signal
import socket

import pytest

from engine.distributed.hostfile import NAMES_ENV
from engine.distributed.local_launch import LocalRanks
from engine.distributed.roll_call import HeadRollCall
from engine.distributed.transport import HOP_DELAY_ENV

from .commands import GREEDY, ROOT, cli_rank

LOST = RuntimeError("[ring] connection to a peer was lost")


@pytest.fixture
def head_and_two_ranks(tmp_path, monkeypatch: pytest.MonkeyPatch):
    """A head's roll call with ranks 1 and 2 reported in (their sockets, to say goodbye or vanish)."""
    hostfile = tmp_path / "ring.json"
    hostfile.write_text(json.dumps([["10.0.0.1:1"], ["10.0.0.2:2"], ["10.0.0.3:3"]]))
    monkeypatch.setenv("MLX_HOSTFILE", str(hostfile))
    monkeypatch.delenv(NAMES_ENV, raising=False)
    monkeypatch.setattr("engine.distributed.roll_call.SETTLE_S", 2.0)
    roll_call = HeadRollCall("127.0.0.1")
    ranks = []
    for rank in (1, 2):
        sock = socket.create_connection(("127.0.0.1", roll_call.port))
        sock.sendall(f"{rank}\n".encode())
        ranks.append(sock)
    roll_call.gather(3, timeout=10)
    yield roll_call, ranks
    roll_call.close()


def test_the_rank_that_ended_without_a_word_is_named_not_its_neighbour(head_and_two_ranks) -> None:
    roll_call, (middle, first) = head_and_two_ranks
    middle.sendall(b"lost\n")  # a victim: its ring connection broke
    middle.close()
    first.close()  # killed: no goodbye
    assert str(roll_call.explain(LOST)).startswith("Lost the Mac 10.0.0.3 (rank 2) mid-answer: its SpecChat process ended")


def test_a_rank_that_reported_its_own_error_is_named_with_it(head_and_two_ranks) -> None:
    roll_call, (middle, first) = head_and_two_ranks
    middle.sendall(b"error The model is too big for this Mac.\n")
    middle.close()
    first.sendall(b"lost\n")
    first.close()
    assert str(roll_call.explain(LOST)) == "The Mac 10.0.0.2 (rank 1) failed: The model is too big for this Mac."


def test_ranks_that_stay_silent_and_connected_are_named_as_unreachable(head_and_two_ranks) -> None:
    roll_call, _ = head_and_two_ranks
    message = str(roll_call.explain(LOST))
    assert message.startswith("Lost the connection to 10.0.0.2 (rank 1) and 10.0.0.3 (rank 2)")


@pytest.mark.distributed
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
