"""The agent benchmark: an agent's recorded requests replayed through the server's job path, each mode from the same
state, every turn checked against standard decoding's; and `specchat-cli benchmark --agent`.

The tiny models read at most 1024 tokens, so the sessions here are short ones in the shipped session's shape (read a
file, write it back edited, run the tests); the shipped one and Claude Code's and Codex's recordings are checked to
load.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli.agent_benchmark import AgentTurn, load_session, measure_turn
from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.models.app_paths import RESOURCES
from engine.params import GenerationParams
from engine.serving.reasoning_api import parse_openai
from engine.serving.tool_grammar import constrained
from tests.benchmarks.agent_replay import SESSIONS
from tests.engine.cli.test_main import run
from tests.engine.serving.scripted import WEATHER_TOOL

GREEDY = GenerationParams.preset("greedy", max_tokens=16)
SOURCE = "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
READ = {"type": "function", "function": {"name": "read_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
WRITE = {"type": "function", "function": {"name": "write_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}}


def _call(call_id: str, name: str, **arguments: str) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def short_session() -> list[dict]:
    """Three requests, each the whole history: the task; after read_file's result; after write_file's."""
    history = [{"role": "user", "content": "Rename w and h to width and height in shapes.py."}]
    steps = [[], [_call("c1", "read_file", path="shapes.py"), {"role": "tool", "tool_call_id": "c1", "content": SOURCE}],
             [_call("c2", "write_file", path="shapes.py", content=SOURCE.replace("w", "width")),
              {"role": "tool", "tool_call_id": "c2", "content": "Wrote 96 bytes."}]]
    requests = []
    for step in steps:
        history = history + step
        requests.append({"model": "recorded-agent", "messages": history, "tools": [READ, WRITE], "temperature": 0.7})
    return requests


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"description": "a short edit", "requests": short_session()}))
    return path


def test_the_shipped_session_loads_as_an_agent_sent_it() -> None:
    turns = load_session(RESOURCES / "agent_sessions" / "edit_inventory.json")
    assert [t.label for t in turns] == ["turn 1 after user", "turn 2 after read_file", "turn 3 after write_file",
                                        "turn 4 after run_tests", "turn 5 after write_file", "turn 6 after run_tests"]
    assert all(len(t.request.tooling.tools) == 3 for t in turns)
    assert turns[-1].request.prompt[:len(turns[-2].request.prompt)] == turns[-2].request.prompt  # each the whole history


def test_a_turn_is_generated_with_the_tools_in_the_prompt_as_the_server_does(tool_target, tool_dirs) -> None:
    body = {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER_TOOL]}
    turn = AgentTurn(parse_openai(body, "chat", ["m"], GREEDY), "turn 1")
    pair = ModelPair(tool_target, None)
    standard = GREEDY.replace(mode="standard")
    measured, _ = measure_turn(pair, turn, standard)
    as_served = constrained(turn.request.tooling, standard, pair.tokenizer)  # under auto, a call is held to the tools
    with_tools = generate(body["messages"], pair, as_served, tools=[WEATHER_TOOL])
    without = generate(body["messages"], pair, standard)
    assert with_tools.tokens != without.tokens  # the tools change the prompt, so the answer tells them apart
    assert measured.token_ids == with_tools.tokens


def test_a_turn_whose_required_call_never_comes_is_still_measured(tool_target) -> None:
    body = {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER_TOOL], "tool_choice": "required"}
    turn = AgentTurn(parse_openai(body, "chat", ["m"], GREEDY), "turn 1")
    measured, calls = measure_turn(ModelPair(tool_target, None), turn, GREEDY.replace(mode="standard"))
    assert calls == 0 and len(measured.token_ids) == GREEDY.max_tokens  # random weights call nothing


def test_benchmark_agent_replays_the_session_with_each_mode(tiny_dirs, session_file: Path) -> None:
    code, out = run(["benchmark", "--target", str(tiny_dirs[0]), "--draft", str(tiny_dirs[1]), "--agent", str(session_file),
                     "--modes", "prompt-lookup,adaptive", "--max-tokens", "24", "--json"])
    assert code == 0
    data = json.loads(out)
    assert [(r["mode"], r["category"]) for r in data["runs"]] == [
        (mode, label) for mode in ("standard", "prompt-lookup", "adaptive")
        for label in ("turn 1 after user", "turn 2 after read_file", "turn 3 after write_file")]
    assert all(r["identical_to_standard"] for r in data["runs"])  # greedy: every turn as standard decoding wrote it
    for mode in ("prompt-lookup", "adaptive"):
        summary = data["summary"][mode]
        assert summary["identical_to_standard"] and summary["speedup_vs_standard"] > 0
        assert [t["tokens_per_pass"] >= 1 and t["speedup_vs_standard"] > 0 for t in summary["turns"]] == [True] * 3
    assert data["summary"]["adaptive"]["acceptance_rate"] is not None


def test_benchmark_agent_prints_each_turns_figures(tiny_dirs, session_file: Path) -> None:
    code, out = run(["benchmark", "--target", str(tiny_dirs[0]), "--agent", str(session_file), "--modes", "prompt-lookup",
                     "--max-tokens", "8"])
    assert code == 0
    turn_lines = [line for line in out.splitlines() if line.strip().startswith("prompt-lookup") and "turn" in line]
    assert len(turn_lines) == 3 and all("x standard" in line and "tok/pass" in line for line in turn_lines)


def test_recorded_claude_code_and_codex_sessions_load_through_their_apis_parsers() -> None:
    """The recordings keep each request's path and body (Anthropic Messages, Responses), xz-compressed."""
    claude = load_session(SESSIONS / "claude_code_edit.json.xz")
    assert [t.label for t in claude] == ["turn 1 after user", "turn 2 after user", "turn 3 after Read", "turn 4 after Write"]
    assert claude[0].request.tooling is None and len(claude[1].request.tooling.tools) > 20  # the title, then the agent
    codex = load_session(SESSIONS / "codex_edit.json.xz")
    assert [t.label for t in codex] == ["turn 1 after user", "turn 2 after exec_command", "turn 3 after exec_command"]


@pytest.mark.parametrize(
    "name, content, message",
    [("session.json", '[{"path": "/v1/embeddings", "body": {}}]', "request 1: a recorded request needs a body and the path"),
     ("session.json.xz", "{}", "It must be xz-compressed JSON")],
)
def test_a_recorded_session_that_cannot_be_read_is_named(tmp_path: Path, name: str, content: str, message: str) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(ValueError, match=message):
        load_session(tmp_path / name)


@pytest.mark.parametrize(
    "content, message",
    [("{", "is not valid JSON"), ('{"requests": []}', "must hold a JSON list of chat-completions requests"),
     ('[{"messages": [{"role": "user", "content": "Hi"}]}, {"tools": []}]', "request 2: 'messages' is required")],
)
def test_benchmark_agent_refuses_bad_sessions_in_one_line(tiny_dirs, tmp_path: Path, capsys, content: str, message: str) -> None:
    path = tmp_path / "session.json"
    path.write_text(content)
    assert run(["benchmark", "--target", str(tiny_dirs[0]), "--agent", str(path)])[0] == 1
    assert message in capsys.readouterr().err
    assert run(["benchmark", "--target", str(tiny_dirs[0]), "--agent", str(path), "--conversation", str(path)])[0] == 1
    assert "not both" in capsys.readouterr().err
