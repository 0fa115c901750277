"""`specchat-cli serve --hosts`: the pipelined pair behind the OpenAI-compatible endpoint; a Mac that stops ends the
server with one line naming it, after the request under way got the error."""

from __future__ import annotations

import os
import signal

import httpx
import pytest

from engine import GenerationParams, ModelPair, generate
from engine.distributed.local_launch import LocalRanks
from tests.engine.distributed.commands import GREEDY, ROOT, cli_rank

pytestmark = pytest.mark.distributed
QUESTION = "Tell me about the sea."


def ask(address: str, max_tokens: int) -> httpx.Response:
    body = {"model": "qwen2-target", "messages": [{"role": "user", "content": QUESTION}], "max_tokens": max_tokens,
            "temperature": 0, "history": False}
    return httpx.post(f"{address}/chat/completions", json=body, timeout=120)


def test_serve_across_two_ranks_answers_as_one_process_and_stops_when_a_rank_dies(dense_models, tmp_path) -> None:
    target, draft = dense_models("qwen2")
    alone = generate([{"role": "user", "content": QUESTION}], ModelPair.load(str(target)),
                     GenerationParams.preset("greedy", max_tokens=12, mode="standard"))
    command = cli_rank("serve", "--hosts", str(tmp_path / "unused.json"), "--target", str(target), "--draft", str(draft),
                       "--port", "0", *GREEDY)
    with LocalRanks(command, 2, env={"PYTHONPATH": str(ROOT)}) as ranks:
        head, worker = ranks.processes
        assert head.stdout is not None
        line = head.stdout.readline()
        assert line.startswith("Serving "), line
        address = line.split(" on ")[1].split()[0]
        answer = ask(address, 12)
        assert answer.status_code == 200
        assert answer.json()["choices"][0]["message"]["content"] == alone.text
        os.kill(worker.pid, signal.SIGKILL)
        failed = ask(address, 12)
        results = ranks.wait(timeout=60)
    assert failed.status_code != 200
    assert "Lost the Mac 127.0.0.1 (rank 1)" in failed.json()["error"]["message"]
    assert results[0].returncode == 1
    errors = [line for line in results[0].stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: Lost the Mac 127.0.0.1 (rank 1) mid-answer")
