"""`specchat --self-test`, run as the user (or CI's bundle) would: a fresh process, its exit status, one line."""

from __future__ import annotations

import subprocess
import sys

import pytest


def self_test(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.main", "--self-test", *args], capture_output=True, text=True, timeout=300)


def test_the_self_test_passes_with_the_built_in_tiny_models(isolated_home) -> None:
    done = self_test()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("self-test passed: tiny-target with draft tiny-draft: ")
    assert "drafted tokens accepted" in done.stdout and "an MCP tool answered" in done.stdout
    assert done.stdout.count("\n") == 1
    assert "Fatal" not in done.stderr and "Traceback" not in done.stderr
    assert not (isolated_home / "app-data" / "conversations.sqlite3").exists()  # the user's data is untouched


def test_the_self_test_uses_a_given_pair(tiny_dirs, isolated_home) -> None:
    done = self_test("--target", str(tiny_dirs[0]), "--draft", str(tiny_dirs[1]))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("target, reason", [("/no/such/model", "No model at /no/such/model")])
def test_the_self_test_fails_with_the_reason(target: str, reason: str, isolated_home) -> None:
    done = self_test("--target", target)
    assert done.returncode == 1
    assert done.stdout.startswith("self-test failed: ") and reason in done.stdout
