"""Record what Claude Code and Codex CLI send while they read a file and rewrite it, as replayable session files.

    PYTHONPATH=. .venv/bin/python -m tests.benchmarks.record_agent_sessions tests/engine/serving/fixtures/sessions

Each client (from npm: `claude -p`, `codex exec`, with their default tools and system prompts) drives `serve` on
loopback over the tiny tool model, whose answers are scripted (tests/engine/serving/scripted.py: random weights
never call a tool): read `inventory.py`, write it back with the field renamed, then say what changed. Every request
body the client sends is kept, in order, with its path, so a session file holds the conversation as it grew: the
agent's system prompt and tools, the file as its tool read it, the rewrite, the tools' results. What is specific to
this machine (the scratch folder, the OS version, the date, ids) is replaced by fixed stand-ins; the requests are
otherwise as sent. The files are xz-compressed JSON (`xz -dc` shows them): each request repeats the agent's ~40-80 KB
of tools, which xz's long window stores once.

The replay (tests/benchmarks/agent_replay.py, tests/engine/serving/test_recorded_sessions.py) sends them again.
"""

from __future__ import annotations

import json
import lzma
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.fixtures.tiny_tool_model import build_tool_pair
from engine.models.loading import load_model
from engine.serving.listener import RunningServer, bind
from engine.serving.server import create_app
from tests.engine.serving.scripted import GREEDY, ScriptedRunner

PROJECT = "/home/user/project"  # the scratch folder's stand-in in the recorded requests
DATE = "2026-11-27"
BEFORE = '''"""A shop's stock: items with a unit price and a count on hand."""

from dataclasses import dataclass


@dataclass
class Item:
    """One line of stock."""

    name: str
    price: float
    qty: int

    def value(self) -> float:
        """What the items on hand are worth."""
        return self.price * self.qty


class Inventory:
    """Items by name."""

    def __init__(self) -> None:
        self.items: dict[str, Item] = {}

    def add(self, name: str, price: float, qty: int = 0) -> None:
        """Stock a new item (qty on hand, 0 by default)."""
        self.items[name] = Item(name, price, qty)

    def restock(self, name: str, qty: int) -> None:
        """Add qty units of an item already stocked."""
        self.items[name].qty += qty

    def total_value(self) -> float:
        """What everything on hand is worth."""
        return sum(item.value() for item in self.items.values())
'''
AFTER = BEFORE.replace("qty", "quantity")
TASK = "In inventory.py, rename the field qty to quantity everywhere, docstrings included."
DONE = "Renamed qty to quantity in inventory.py: the field, the parameters of add and restock, and their docstrings."


def call(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def claude_reply(folder: Path) -> Callable[[str], str]:
    """Read the file, write it back renamed, then report; any request without the tools (the title) gets a title."""
    path = str(folder / "inventory.py")

    def reply(prompt: str) -> str:
        if '"name": "Read"' not in prompt:
            return json.dumps({"title": "Rename qty to quantity"})
        steps = [call("Read", {"file_path": path}), call("Write", {"file_path": path, "content": AFTER}), DONE]
        return steps[min(prompt.count("<tool_response>"), 2)]

    return reply


def codex_reply(folder: Path) -> Callable[[str], str]:
    """Show the file with the shell, write it back renamed through a here-document, then report."""
    rewrite = f"cat > inventory.py <<'EOF'\n{AFTER}EOF"

    def reply(prompt: str) -> str:
        steps = [call("exec_command", {"cmd": "cat inventory.py"}), call("exec_command", {"cmd": rewrite}), DONE]
        return steps[min(prompt.count("<tool_response>"), 2)]

    return reply


def recording(app: Any, requests: list[dict[str, Any]]) -> Any:
    """`app`, keeping each POST's path and JSON body as it arrives."""

    async def recorded(scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)
        chunks: list[bytes] = []

        async def receive_and_keep() -> dict:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    requests.append({"path": scope["path"], "body": json.loads(b"".join(chunks))})
            return message

        await app(scope, receive_and_keep, send)

    return recorded


def run_client(runner: ScriptedRunner, command: list[str], cwd: Path, env: Callable[[str], dict[str, str]]) -> list[dict]:
    """The requests `command` sent to a server over `runner` while it ran; raises if it failed."""
    requests: list[dict[str, Any]] = []
    server = RunningServer(recording(create_app(runner, GREEDY.replace(max_tokens=8192)), requests), bind("127.0.0.1", 0))
    server.start()
    try:
        done = subprocess.run(command, cwd=cwd, env={**os.environ, **env(f"http://127.0.0.1:{server.port}")},
                              capture_output=True, text=True, timeout=600)
    finally:
        server.stop()
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed:\n{done.stdout}\n{done.stderr}")
    print(done.stdout, file=sys.stderr)
    return requests


def record_claude(tokenizer: Any, root: Path) -> list[dict]:
    folder = root / "claude"
    folder.mkdir()
    (folder / "inventory.py").write_text(BEFORE)
    runner = ScriptedRunner(tokenizer, claude_reply(folder), model="agent-model")
    requests = run_client(runner, ["claude", "-p", "--permission-mode", "acceptEdits", TASK], folder, lambda url: {
        "HOME": str(root), "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "unused",
        "ANTHROPIC_MODEL": "agent-model", "ANTHROPIC_SMALL_FAST_MODEL": "agent-model"})
    assert (folder / "inventory.py").read_text() == AFTER, "Claude Code did not rewrite the file"
    return requests


def record_codex(tokenizer: Any, root: Path) -> list[dict]:
    folder, home = root / "codex", root / "codex-home"
    folder.mkdir()
    home.mkdir()
    (folder / "inventory.py").write_text(BEFORE)
    runner = ScriptedRunner(tokenizer, codex_reply(folder), model="agent-model")

    def env(url: str) -> dict[str, str]:
        (home / "config.toml").write_text(f'model = "agent-model"\nmodel_provider = "local"\n[model_providers.local]\n'
                                          f'name = "local"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
                                          'env_key = "LOCAL_KEY"\n')
        return {"HOME": str(root), "CODEX_HOME": str(home), "LOCAL_KEY": "unused"}

    requests = run_client(runner, ["codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                                   TASK], folder, env)
    assert (folder / "inventory.py").read_text() == AFTER, "Codex did not rewrite the file"
    return requests


def anonymised(requests: list[dict], root: Path, folder: str) -> list[dict]:
    """The requests with this machine's folders, OS version, date and ids replaced by fixed stand-ins."""
    text = json.dumps(requests)
    slug = str(root / folder).replace("/", "-")  # Claude Code names the folder's memory after its path
    for real, stand_in in [(str(root / folder), PROJECT), (slug, PROJECT.replace("/", "-")), (str(root), "/home/user"),
                           (platform.release(), "6.1.0")]:
        text = text.replace(real, stand_in)
    text = text.replace(time.strftime("%Y-%m-%d"), DATE)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "00000000-0000-0000-0000-000000000000", text)
    text = re.sub(r"[0-9a-f]{64}", "0" * 64, text)
    return json.loads(text)


def save(path: Path, client: str, description: str, requests: list[dict]) -> None:
    session = {"client": client, "recorded": DATE, "description": description, "requests": requests}
    path.write_bytes(lzma.compress(json.dumps(session, indent=1).encode()))
    size = sum(len(json.dumps(r["body"])) for r in requests)
    print(f"{path}: {len(requests)} requests, {size // 1024} KB of JSON, {path.stat().st_size // 1024} KB compressed",
          file=sys.stderr)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        tokenizer = load_model(str(build_tool_pair(root / "model")[0])).tokenizer
        version = subprocess.run(["claude", "--version"], capture_output=True, text=True).stdout.strip()
        save(out / "claude_code_edit.json.xz", version,
             f"{version} (`claude -p --permission-mode acceptEdits`, default tools and system prompt) renames a field in inventory.py: it reads the "
             "file with Read, writes it back whole with Write, and reports. Every request it sent, in order (Anthropic "
             "Messages).", anonymised(record_claude(tokenizer, root), root, "claude"))
        version = subprocess.run(["codex", "--version"], capture_output=True, text=True).stdout.strip()
        save(out / "codex_edit.json.xz", version,
             f"{version} (`codex exec`, default tools and prompt) renames a field in inventory.py: it shows the file "
             "with exec_command, writes it back whole with a here-document, and reports. Every request it sent, in "
             "order (OpenAI Responses).", anonymised(record_codex(tokenizer, root), root, "codex"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
