"""Claude Code and Codex CLI for the tests that drive them: the ones installed, else pinned versions that npm
installs once under ~/.cache (as CI does: a fresh machine with Node.js has npm and its registry); a test is skipped,
saying why, only where neither can be had."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

PINNED = {"claude": "@anthropic-ai/claude-code@2.1.332", "codex": "@openai/codex@0.171.0"}
CACHE = Path.home() / ".cache" / "specchat-agent-clis"


def agent_cli(name: str) -> str:
    """The path of `name` ("claude" or "codex") to run, or a skip that says what is missing."""
    installed = shutil.which(name)
    if installed is not None:
        return installed
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"{name} is not installed, and there is no npm to install {PINNED[name]} with")
    prefix = CACHE / PINNED[name].lstrip("@").replace("/", "+")
    binary = prefix / "node_modules" / ".bin" / name
    prefix.mkdir(parents=True, exist_ok=True)
    with (prefix / ".lock").open("w") as lock:  # two test workers install it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            done = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", PINNED[name]],
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0 or not binary.exists():
                pytest.skip(f"npm could not install {PINNED[name]}: {done.stderr.strip()[-300:]}")
    return str(binary)
