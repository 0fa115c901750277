"""`specchat-cli generate --hosts FILE` typed on the head: mlx.launch starts every rank (127.0.0.1 hosts run
locally, without ssh), the answer is the one-process answer, and a failed rank fails the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine import GenerationParams, ModelPair, generate
from engine.distributed.local_launch import first_of_free_ports

from .commands import GREEDY, ROOT

pytestmark = pytest.mark.distributed


def hostfile(folder: Path, size: int) -> Path:
    """An mlx.launch hostfile of `size` loopback hosts."""
    path = folder / "hosts.json"
    path.write_text(json.dumps({"hosts": [{"ssh": "127.0.0.1", "ips": ["127.0.0.1"]}] * size}))
    return path


def specchat_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, cwd=ROOT, timeout=240)


def test_generate_across_two_ranks_started_by_mlx_launch_answers_as_one_process(dense_models, tmp_path) -> None:
    target, draft = dense_models("qwen2")
    prompt = "Tell me about the sea."
    alone = generate(prompt, ModelPair.load(str(target)), GenerationParams.preset("greedy", max_tokens=16, mode="standard"),
                     chat=False)
    across = specchat_cli("generate", "--hosts", str(hostfile(tmp_path, 2)), "--ring-port", str(first_of_free_ports(2)),
                          "--target", str(target), "--draft", str(draft), "--num-draft", "3", "--prompt", prompt,
                          "--max-tokens", "16", "--json", *GREEDY)
    assert across.returncode == 0, across.stderr
    assert json.loads(across.stdout.strip().splitlines()[-1])["tokens"] == alone.tokens
    assert "note: the target runs across 2 Macs" in across.stderr


def test_a_failed_rank_fails_the_command_with_one_line_although_mlx_launch_exits_0(tmp_path) -> None:
    done = specchat_cli("generate", "--hosts", str(hostfile(tmp_path, 2)), "--ring-port", str(first_of_free_ports(2)),
                        "--target", str(tmp_path / "no-such-model"), "--prompt", "Hi", *GREEDY)
    assert done.returncode == 1
    assert [line for line in done.stderr.splitlines() if line.strip()] == [
        f"error: No model at {tmp_path / 'no-such-model'}: the path does not exist. Check the path, or name a Hugging "
        "Face repo like mlx-community/Qwen2.5-0.5B-Instruct-4bit."
    ]
