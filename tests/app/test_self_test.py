"""`specchat --self-test`: once as the user (or CI's bundle) runs it, a fresh process with its exit status and one
line; its other cases through the same entry point in the test's process, where a child would prove nothing more
(the arguments, the window, the answer, the local server and the MCP tool are the same code) at 3-4 CPU-seconds
more each, most of it importing the app again."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.main import main


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


def test_the_self_test_uses_a_given_pair(tiny_dirs, isolated_home, capsys, monkeypatch) -> None:
    def no_built_in_models(*args: object) -> None:
        raise AssertionError("the self-test built its own tiny models instead of loading the pair it was given")

    monkeypatch.setattr("engine.fixtures.tiny_models.build_tiny_pair", no_built_in_models)
    assert main(["--self-test", "--target", str(tiny_dirs[0]), "--draft", str(tiny_dirs[1])]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"self-test passed: {tiny_dirs[0].name} with draft {tiny_dirs[1].name}: ") and out.count("\n") == 1
    assert not (isolated_home / "app-data" / "conversations.sqlite3").exists()


@pytest.mark.parametrize("target, reason", [("/no/such/model", "No model at /no/such/model")])
def test_the_self_test_fails_with_the_reason(target: str, reason: str, isolated_home, capsys) -> None:
    assert main(["--self-test", "--target", target]) == 1
    out = capsys.readouterr().out
    assert out.startswith("self-test failed: ") and reason in out
