"""Measuring modes on an agent's session: the requests a tool-using coding agent sent, replayed turn by turn.

An agent editing code reads files through tools and writes them back, edited: its answers copy what the
conversation already holds, the workload where lookup and history drafting should win most. A session file is
the list of requests the agent sent, each the whole history with its tools (as an agent sends it: the recorded
agent's own calls and the tools' results), in a JSON list or under "requests": chat-completions bodies, or
`{"path": ..., "body": ...}` entries as a client's recording keeps them (Claude Code's Anthropic Messages, Codex's
Responses; tests/benchmarks/record_agent_sessions.py), in a file that may be xz-compressed. Every request is read
as the server reads it (the route's parser: its messages, tools and tool choice) and generated as the server
generates it (`generation_queue.run_job`: the tools in the chat template, the output split into text
and calls), so the figures are the server's. Only the settings are the benchmark's (greedy by default), not the
recorded ones.

Each mode replays the whole session from the same state (empty prompt cache, empty history, an adaptive policy
that has learnt nothing); within it, the prompt cache and the history carry from turn to turn as they would on
the server. Each turn is timed as the single-prompt benchmark times a prompt, and, greedy, checked token for
token against standard decoding's answer to the same request.
"""

from __future__ import annotations

import json
import lzma
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..decoding.pair import ModelPair
from ..events import GenerationResult, RoundEvent
from ..params import GenerationParams
from ..serving.generation_queue import GenerationJob, run_job
from ..serving.openai_api import ApiError, ApiRequest
from ..serving.pieces import ToolCall
from ..serving.server import ROUTES
from .benchmark import Measurement, Run, mode_params, record, to_run, warm_up
from .conversation_benchmark import read_json, start_fresh


@dataclass(frozen=True)
class AgentTurn:
    """One recorded request, read as the server reads it; `label` names what the turn answers."""

    request: ApiRequest
    label: str


def load_session(path: Path) -> list[AgentTurn]:
    """The requests of a session file; ValueError naming what is wrong with it."""
    data = _read_session(path)
    requests = data.get("requests") if isinstance(data, dict) else data
    if not isinstance(requests, list) or not requests or not all(isinstance(r, dict) for r in requests):
        raise ValueError(f"{path} must hold a JSON list of chat-completions requests (or an object with one under "
                         '"requests"), each {"messages": [...], "tools": [...]} or a recorded {"path": "/v1/messages", '
                         '"body": {...}}, in the order the agent sent them.')
    return [_turn(entry, i, path) for i, entry in enumerate(requests)]


def _read_session(path: Path) -> Any:
    """The session file's JSON, decompressed first when it is `.xz` (recordings repeat the agent's tools)."""
    if path.suffix != ".xz":
        return read_json(path, "agent session")
    try:
        return json.loads(lzma.decompress(path.read_bytes()))
    except (OSError, lzma.LZMAError, ValueError) as e:
        raise ValueError(f"Cannot read the agent session {path}: {e}. It must be xz-compressed JSON.") from e


def _turn(entry: dict[str, Any], index: int, path: Path) -> AgentTurn:
    route, body = (entry.get("path"), entry["body"]) if "body" in entry else ("/v1/chat/completions", entry)
    if route not in ROUTES or not isinstance(body, dict):
        raise ValueError(f"{path}: request {index + 1}: a recorded request needs a body and the path of an API the "
                         f"server has ({', '.join(ROUTES)}), not {route!r}.")
    try:
        request = ROUTES[route].parse(body, [str(body.get("model", "recorded"))], GenerationParams())
    except ApiError as e:
        raise ValueError(f"{path}: request {index + 1}: {e.message}") from None
    return AgentTurn(request, f"turn {index + 1} {_answers(request.prompt)}")


def _answers(messages: Any) -> str:
    """What the turn answers: the user, or the result of the tool the agent called last."""
    last = messages[-1] if isinstance(messages, list) and messages else {}
    if last.get("role") != "tool":
        return f"after {last.get('role', 'user')}"
    calls = [c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls", [])]
    called = {c["id"]: c["function"]["name"] for c in calls}
    return f"after {called.get(last.get('tool_call_id'), 'tool')}"


def measure_turn(pair: ModelPair, turn: AgentTurn, params: GenerationParams) -> tuple[Measurement, int]:
    """Run one request through the server's job path, noting when the first round ended; also the calls it made."""
    from ..decoding.generation import generate_stream

    seen: dict[str, Any] = {"first_end": None, "first_tokens": 0, "result": None, "calls": 0, "error": None}

    def watched(*args: Any, **kwargs: Any) -> Iterator[object]:
        for event in generate_stream(*args, **kwargs):
            if isinstance(event, RoundEvent) and seen["first_end"] is None:
                seen.update(first_end=time.perf_counter(), first_tokens=event.emitted)
            elif isinstance(event, GenerationResult):
                seen["result"] = event  # kept even when the job then fails (a required call the model did not make)
            yield event

    def deliver(event: object) -> None:
        if isinstance(event, ToolCall):
            seen["calls"] += 1
        elif isinstance(event, BaseException):
            seen["error"] = event

    job = GenerationJob(turn.request.prompt, True, params.replace(think=turn.request.params.think), deliver,
                        tooling=turn.request.tooling)
    run_job(pair, job, stream=watched)
    end = time.perf_counter()
    result: GenerationResult | None = seen["result"]
    if result is None:
        raise seen["error"]
    s = result.stats
    measured = Measurement(result.tokens, seen["first_tokens"], seen["first_end"] or end, end, s.drafted, s.accepted,
                           s.rounds, result.text)
    return measured, seen["calls"]


def run_session(pair: ModelPair, turns: list[AgentTurn], mode: str, params: GenerationParams, iteration: int) -> list[Run]:
    """One mode through the whole session, from a fresh state."""
    start_fresh(pair)
    runs = []
    for index, turn in enumerate(turns):
        measured, calls = measure_turn(pair, turn, mode_params(mode, params))
        run = to_run(mode, index, iteration, measured)
        run.category = f"{turn.label}: {calls} call(s)" if calls else turn.label
        runs.append(run)
    return runs


def run_agent(pair: ModelPair, turns: list[AgentTurn], modes: list[str], params: GenerationParams,
              iterations: int = 1, on_run: Callable[[Run], None] | None = None) -> list[Run]:
    """Every mode through the session, `iterations` times, standard first in each iteration."""
    for mode in modes:
        run_session(pair, turns[:1], mode, warm_up(params), -1)
    runs: list[Run] = []
    for iteration in range(iterations):
        standard: dict[int, list[int]] = {}
        for mode in modes:
            for run in run_session(pair, turns, mode, params, iteration):
                record(run, standard, params.greedy, runs, on_run)
    return runs
