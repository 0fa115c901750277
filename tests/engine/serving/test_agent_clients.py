"""Claude Code and Codex CLI (from npm) driving `serve` on loopback: each completes a task that calls a tool.

The model is scripted (tests/engine/serving/scripted.py: random weights never call a tool) by what its prompt
holds, so the clients' real requests (their default tools and system prompts, their title and follow-up
requests, in whatever order they send them) go through the server's real parsing, prompt rendering, output
splitting and streaming. Skipped where the CLIs are not installed (`npm install -g @anthropic-ai/claude-code
@openai/codex`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.engine.serving.scripted import ScriptedRunner, serving


def _call(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@pytest.mark.skipif(shutil.which("claude") is None, reason="Claude Code is not installed (npm i -g @anthropic-ai/claude-code)")
def test_claude_code_reads_a_file_with_its_read_tool_and_answers_from_it(tool_target, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("The harbour opens at nine.\n")

    def reply(prompt: str) -> str:
        if "<tool_response>" in prompt:  # the file came back: answer from it
            return "The notes say the harbour opens at nine." if "opens at nine" in prompt else "No file."
        if '"name": "Read"' in prompt:
            return _call("Read", {"file_path": str(tmp_path / "notes.txt")})
        return json.dumps({"title": "Read notes"})  # the session title request (no tools)

    runner = ScriptedRunner(tool_target.tokenizer, reply, model="tiny-tools")
    with serving(runner) as url:
        env = {**os.environ, "HOME": str(tmp_path), "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "unused",
               "ANTHROPIC_MODEL": "tiny-tools", "ANTHROPIC_SMALL_FAST_MODEL": "tiny-tools"}
        done = subprocess.run(["claude", "-p", "What do the notes in notes.txt say?"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "opens at nine" in done.stdout
    assert any('"name": "Read"' in p and "<tool_response>" in p and "opens at nine" in p for p in runner.prompts)


@pytest.mark.skipif(shutil.which("codex") is None, reason="Codex CLI is not installed (npm i -g @openai/codex)")
def test_codex_edits_a_file_with_its_shell_tool(tool_target, tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "codex"
    work.mkdir()
    home.mkdir()
    (work / "notes.txt").write_text("hello\n")

    def reply(prompt: str) -> str:
        if "<tool_response>" in prompt:
            return "Done: notes.txt now ends with bye."
        return _call("exec_command", {"cmd": "echo bye >> notes.txt"})

    runner = ScriptedRunner(tool_target.tokenizer, reply, model="tiny-tools")
    with serving(runner) as url:
        (home / "config.toml").write_text(f'model = "tiny-tools"\nmodel_provider = "local"\n[model_providers.local]\n'
                                          f'name = "local"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
                                          'env_key = "LOCAL_KEY"\n')
        env = {**os.environ, "CODEX_HOME": str(home), "LOCAL_KEY": "unused"}
        done = subprocess.run(["codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                               "Append the line 'bye' to notes.txt"], cwd=work, env=env, capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "notes.txt").read_text() == "hello\nbye\n"
