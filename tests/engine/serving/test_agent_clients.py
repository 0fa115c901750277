"""Claude Code and Codex CLI (from npm) driving `serve` on loopback: each completes a task that calls a tool (Codex
with its shell tool, and with its freeform apply_patch where a model catalog offers it).

The model is scripted (tests/engine/serving/scripted.py: random weights never call a tool) by what its prompt
holds, so the clients' real requests (their default tools and system prompts, their title and follow-up
requests, in whatever order they send them) go through the server's real parsing, prompt rendering, output
splitting and streaming. The CLIs are the ones installed, else pinned versions npm installs (`agent_clis`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.engine.serving.scripted import ScriptedRunner, serving


def _call(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_claude_code_reads_a_file_with_its_read_tool_and_answers_from_it(tool_target, tmp_path: Path, claude_cli: str) -> None:
    (tmp_path / "notes.txt").write_text("The harbour opens at nine.\n")

    def reply(prompt: str) -> str:
        if "<tool_response>" in prompt:  # the file came back: answer from it
            return "The notes say the harbour opens at nine." if "opens at nine" in prompt else "No file."
        if '"name": "Read"' in prompt:
            return _call("Read", {"file_path": str(tmp_path / "notes.txt")})
        return json.dumps({"title": "Read notes"})  # the session title request (no tools)

    runner = ScriptedRunner(tool_target.tokenizer, reply, model="tiny-tools")
    with serving(runner) as url:
        done = _claude_p(claude_cli, url, tmp_path, "What do the notes in notes.txt say?")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "opens at nine" in done.stdout
    assert any('"name": "Read"' in p and "<tool_response>" in p and "opens at nine" in p for p in runner.prompts)


def test_claude_code_compacts_its_conversation_when_it_outgrows_the_context_and_finishes(tool_target, tmp_path: Path,
                                                                                        claude_cli: str) -> None:
    """Claude Code believes a model it does not know reads 200k tokens or more; a local model reads far fewer. Told
    in Anthropic's words that the prompt is too long, it summarises the conversation and goes on."""
    runner = ScriptedRunner(tool_target.tokenizer, lambda prompt: reply(prompt), model="tiny-tools")

    def reply(prompt: str) -> str:
        if "Respond with plain text only" in prompt.split("<|im_start|>")[-2]:  # Claude Code asks for a summary
            return "<analysis>Counted.</analysis>\n<summary>SUMMARY-7: seq 1 100 ran many times.</summary>"
        if "SUMMARY-7" in prompt:
            return "Done: seq ran until the conversation was summarised."
        if '"name": "Bash"' not in prompt:
            return json.dumps({"title": "Count"})  # the session title request (no tools)
        if runner.context is None:  # the first request with tools: room for a dozen outputs more
            runner.context = len(tool_target.tokenizer.encode(prompt)) + 5000
        return _call("Bash", {"command": "seq 1 100", "description": "Count to 100"})

    with serving(runner) as url:
        done = _claude_p(claude_cli, url, tmp_path, "Run seq 1 100 again and again.", "--allowedTools", "Bash(seq:*)")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "seq ran until the conversation was summarised" in done.stdout
    assert runner.refused >= 1 and any("SUMMARY-7" in p for p in runner.prompts)  # refused, summarised, went on


def test_codex_edits_a_file_with_its_shell_tool(tool_target, tmp_path: Path, codex_cli: str) -> None:
    work, home = _codex_dirs(tmp_path)

    def reply(prompt: str) -> str:
        if "<tool_response>" in prompt:
            return "Done: notes.txt now ends with bye."
        return _call("exec_command", {"cmd": "echo bye >> notes.txt"})

    runner = ScriptedRunner(tool_target.tokenizer, reply, model="tiny-tools")
    with serving(runner) as url:
        done = _codex_exec(codex_cli, url, work, home, "Append the line 'bye' to notes.txt")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "notes.txt").read_text() == "hello\nbye\n"


def test_codex_edits_a_file_with_its_freeform_apply_patch_tool(tool_target, tmp_path: Path, codex_cli: str) -> None:
    """Codex offers apply_patch (a custom tool with a Lark grammar) to a model its catalog gives it: the call comes
    back as the custom tool call Codex applies, and the model was shown an example patch, not the grammar."""
    work, home = _codex_dirs(tmp_path)
    catalog = _catalog(codex_cli, home, "tiny-tools", lambda m: m.get("apply_patch_tool_type") == "freeform"
                       and m.get("tool_mode") != "code_mode_only")
    patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-hello\n+bye\n*** End Patch\n"

    def reply(prompt: str) -> str:
        if "<tool_response>" in prompt:
            return "Done: notes.txt now says bye." if "notes.txt" in prompt.split("<tool_response>")[-1] else "No."
        return _call("apply_patch", {"input": patch})

    runner = ScriptedRunner(tool_target.tokenizer, reply, model="tiny-tools")
    with serving(runner) as url:
        done = _codex_exec(codex_cli, url, work, home, "Change the line hello to bye in notes.txt", catalog=catalog)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "notes.txt").read_text() == "bye\n"
    assert "*** Add File: <filename>" in runner.prompts[0]  # the example the grammar takes
    assert "add_hunk:" not in runner.prompts[0]  # not the grammar's rules


def test_codex_gets_an_answer_from_a_model_its_catalog_puts_in_code_mode(tool_target, tmp_path: Path, codex_cli: str) -> None:
    """A code-mode catalog entry sends Codex's tools in an `additional_tools` input item, all in namespaces the
    server cannot run: they are left out, and the turn is answered, not refused."""
    work, home = _codex_dirs(tmp_path)
    catalog = _catalog(codex_cli, home, "tiny-tools", lambda m: m.get("tool_mode") == "code_mode_only")
    runner = ScriptedRunner(tool_target.tokenizer, lambda prompt: "Hello from the model.", model="tiny-tools")
    with serving(runner) as url:
        done = _codex_exec(codex_cli, url, work, home, "Say hello.", catalog=catalog)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Hello from the model." in done.stdout


def test_codex_says_it_ran_out_of_room_when_the_prompt_outgrows_the_context(tool_target, tmp_path: Path,
                                                                            codex_cli: str) -> None:
    """The server's `context_length_exceeded` is what Codex reads as a full context window: it ends the turn saying
    so (it compacts on its own only when `model_context_window` tells it the model's real window)."""
    work, home = _codex_dirs(tmp_path)
    runner = ScriptedRunner(tool_target.tokenizer, lambda prompt: reply(prompt), model="tiny-tools")

    def reply(prompt: str) -> str:
        if runner.context is None:  # room for a few outputs more than the first request
            runner.context = len(tool_target.tokenizer.encode(prompt)) + 3000
        return _call("exec_command", {"cmd": "seq 1 300"})

    with serving(runner) as url:
        done = _codex_exec(codex_cli, url, work, home, "Run seq 1 300 again and again.")
    assert runner.refused == 1
    assert done.returncode == 1 and "ran out of room in the model's context window" in done.stdout + done.stderr


def _claude_p(claude: str, url: str, work: Path, task: str, *options: str) -> subprocess.CompletedProcess:
    """`claude -p` on `task` in `work` (its HOME too), the served model for every model it asks for."""
    env = {**os.environ, "HOME": str(work), "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "unused",
           "ANTHROPIC_MODEL": "tiny-tools", "ANTHROPIC_SMALL_FAST_MODEL": "tiny-tools"}
    return subprocess.run([claude, "-p", task, *options], cwd=work, env=env, capture_output=True, text=True, timeout=300)


def _codex_dirs(tmp_path: Path) -> tuple[Path, Path]:
    """A project holding notes.txt ("hello") and an empty CODEX_HOME."""
    work, home = tmp_path / "work", tmp_path / "codex"
    work.mkdir()
    home.mkdir()
    (work / "notes.txt").write_text("hello\n")
    return work, home


def _catalog(codex: str, home: Path, model: str, wanted: Callable[[dict], bool]) -> Path:
    """A model catalog giving `model` the first bundled entry `wanted` picks, as docs/agent-clients.md tells users to
    make one (`codex debug models --bundled`, one entry kept under the served name)."""
    bundled = subprocess.run([codex, "debug", "models", "--bundled"], env={**os.environ, "CODEX_HOME": str(home)},
                             capture_output=True, text=True, timeout=60, check=True)
    entry = next(m for m in json.loads(bundled.stdout)["models"] if wanted(m))
    entry.update(slug=model, display_name=model, input_modalities=["text"])
    path = home / "catalog.json"
    path.write_text(json.dumps({"models": [entry]}))
    return path


def _codex_exec(codex: str, url: str, work: Path, home: Path, task: str,
                catalog: Path | None = None) -> subprocess.CompletedProcess:
    """`codex exec` on `task` in `work`, its provider the server at `url` (Responses API)."""
    lines = ['model = "tiny-tools"', 'model_provider = "local"']
    if catalog is not None:
        lines.append(f'model_catalog_json = "{catalog}"')
    lines += ["[model_providers.local]", 'name = "local"', f'base_url = "{url}/v1"', 'wire_api = "responses"',
              'env_key = "LOCAL_KEY"']
    (home / "config.toml").write_text("\n".join(lines) + "\n")
    env = {**os.environ, "CODEX_HOME": str(home), "LOCAL_KEY": "unused"}
    return subprocess.run([codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", task],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)
