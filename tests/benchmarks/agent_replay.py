"""Replay recorded agent sessions against `specchat-cli serve`: time to first token, speculation and the prompt cache.

    PYTHONPATH=. .venv/bin/python -m tests.benchmarks.agent_replay --target $M/smollm2 --max-tokens 128

A session file (tests/benchmarks/record_agent_sessions.py) holds every request Claude Code or Codex CLI sent while
it read a file and rewrote it, in order. Each is sent again as recorded, through the client's own SDK (anthropic's
for Messages, openai's for Responses, so each answer must parse in that API's shape), except that the answer is
capped at `--max-tokens` and greedy, so that the configurations answer alike. The model's answers are its own, not
the recorded agent's: the next request still carries the recorded conversation (the agent's calls, the file as
read, the rewrite), which is what the prompt cache and lookup drafting see.

Three servers run the same model at once, one per configuration (standard decoding with the prompt cache of several
prefixes, or of one as before it had several; Automatic speculation with several), and each request goes to the
three in turn before the next is sent, so that the load of a shared machine falls on all of them alike. With
`--alternate N`, request N (Claude Code's title request, say) is sent again before each later request, as an
agent's other prompts (titles, sub-agents) come between its turns: that is where one cached prefix is thrown away.
Only ratios within one run mean anything.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import openai

SESSIONS = Path(__file__).parents[1] / "engine" / "serving" / "fixtures" / "sessions"
CONFIGS = {  # name -> `serve` options
    "standard, cache": ["--mode", "standard"],
    "standard, one prefix": ["--mode", "standard", "--prompt-cache-mb", "0"],
    "Automatic, cache": ["--mode", "speculative", "--drafter", "auto"],
}


@dataclass
class Replayed:
    """What one replayed request gave: when its first token came (an empty answer's end, when the model wrote
    nothing: the time to read the prompt), what its usage and `speculation` said."""

    path: str
    ttft_s: float = 0.0
    total_s: float = 0.0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    speculation: dict[str, Any] = field(default_factory=dict)
    answer: Any = None  # the SDK's parsed answer: an anthropic Message or an openai Response


def read_session(path: Path) -> dict[str, Any]:
    """A recorded session: {"client", "description", "requests": [{"path", "body"}, ...]}."""
    return json.loads(lzma.decompress(path.read_bytes()))


def replay(base_url: str, session: dict[str, Any], max_tokens: int) -> list[Replayed]:
    """Send the session's requests to the server at `base_url` (without /v1), in order."""
    return [replay_request(base_url, r["path"], r["body"], max_tokens) for r in session["requests"]]


def served_model(base_url: str) -> str:
    """The name the server lists first: what a user sets the agent's model to."""
    return openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0).models.list().data[0].id


def replay_request(base_url: str, path: str, body: dict[str, Any], max_tokens: int) -> Replayed:
    """One recorded request to the served model, streamed, its answer capped at `max_tokens` and greedy."""
    body = {**body, "model": served_model(base_url)}
    if path == "/v1/messages":
        return _messages(base_url, body, max_tokens)
    if path == "/v1/responses":
        return _responses(base_url, body, max_tokens)
    raise ValueError(f"no replay for {path}: sessions hold Anthropic Messages or OpenAI Responses requests")


def _messages(base_url: str, body: dict[str, Any], max_tokens: int) -> Replayed:
    client = anthropic.Anthropic(base_url=base_url, api_key="unused", max_retries=0)
    rest = {k: v for k, v in body.items() if k not in ("model", "messages", "max_tokens", "stream")}
    replayed, start = Replayed("/v1/messages"), time.perf_counter()
    with client.messages.stream(model=body["model"], messages=body["messages"], max_tokens=max_tokens,
                                extra_body={**rest, "temperature": 0}) as stream:
        for event in stream:
            if event.type == "content_block_delta" and not replayed.ttft_s:
                replayed.ttft_s = time.perf_counter() - start
            elif event.type == "message_delta":
                replayed.speculation = (event.model_extra or {}).get("speculation", {})
        replayed.answer = stream.get_final_message()
    usage = replayed.answer.usage
    replayed.cached_tokens = usage.cache_read_input_tokens or 0
    replayed.prompt_tokens = usage.input_tokens + replayed.cached_tokens
    replayed.output_tokens = usage.output_tokens
    return _ended(replayed, start)


def _responses(base_url: str, body: dict[str, Any], max_tokens: int) -> Replayed:
    client = openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0)
    rest = {k: v for k, v in body.items() if k not in ("model", "input", "stream")}
    replayed, start = Replayed("/v1/responses"), time.perf_counter()
    events = client.responses.create(model=body["model"], input=body["input"], stream=True,
                                     extra_body={**rest, "max_output_tokens": max_tokens, "temperature": 0})
    for event in events:
        if event.type.endswith(".delta") and not replayed.ttft_s:
            replayed.ttft_s = time.perf_counter() - start
        elif event.type in ("response.completed", "response.incomplete"):
            replayed.answer = event.response
    if replayed.answer is None:
        raise RuntimeError("the stream ended without response.completed or response.incomplete")
    usage = replayed.answer.usage
    replayed.prompt_tokens, replayed.output_tokens = usage.input_tokens, usage.output_tokens
    replayed.cached_tokens = usage.input_tokens_details.cached_tokens
    replayed.speculation = (replayed.answer.model_extra or {}).get("speculation", {})
    return _ended(replayed, start)


def _ended(replayed: Replayed, start: float) -> Replayed:
    replayed.total_s = time.perf_counter() - start
    replayed.ttft_s = replayed.ttft_s or replayed.total_s  # an empty answer: its end
    return replayed


def without_cache_marks(value: Any) -> Any:
    """`value` without Anthropic's `cache_control` marks, which move to the newest turn as a conversation grows."""
    if isinstance(value, dict):
        return {k: without_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_marks(v) for v in value]
    return value


def extends(earlier: dict[str, Any], later: dict[str, Any]) -> bool:
    """Does `later` continue `earlier`'s conversation (the same instructions, its turns and more)?"""
    turns = "messages" if "messages" in earlier else "input"
    head = [k for k in ("system", "instructions", "tools") if k in earlier or k in later]
    a, b = without_cache_marks(earlier), without_cache_marks(later)
    return all(a.get(k) == b.get(k) for k in head) and b[turns][:len(a[turns])] == a[turns]


@contextmanager
def serve(target: str, options: list[str]) -> Iterator[str]:
    """`specchat-cli serve` over `target` on a free loopback port (greedy); yields its base URL once it listens."""
    command = [sys.executable, "-m", "engine", "serve", "--target", target, "--port", "0", "--preset", "greedy", *options]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        found = re.search(r"http://[\d.]+:(\d+)/v1", line)
        if not found:
            raise RuntimeError(f"serve did not start: {line!r}")
        yield f"http://127.0.0.1:{found.group(1)}"
    finally:
        process.terminate()
        process.wait(timeout=60)


def acceptance(speculation: dict[str, Any]) -> str:
    """This answer's drafts: the tokens each drafter had verified, and how many of all were accepted, e.g.
    'lookup 40: 25/40 accepted'."""
    drafters = ", ".join(f"{d} {n}" for d, n in speculation.get("drafted_by", {}).items())
    return f"{drafters}: {speculation['accepted']}/{speculation['drafted']} accepted" if drafters else "-"


def order(count: int, alternate: int | None) -> list[tuple[int, bool]]:
    """(request index, sent again?) in sending order: each request once, and `alternate` (1-based) again before each
    later one."""
    sent: list[tuple[int, bool]] = []
    for index in range(count):
        if alternate is not None and index > alternate:
            sent.append((alternate - 1, True))
        sent.append((index, False))
    return sent


def run(target: str, max_tokens: int, sessions: list[Path], alternate: int | None) -> dict[str, Any]:
    """Every session through every configuration, request by request in turn; the results and the load."""
    results: dict[str, Any] = {"load_before": os.getloadavg(), "sessions": {}}
    with ExitStack() as stack:
        urls = {name: stack.enter_context(serve(target, options)) for name, options in CONFIGS.items()}
        for path in sessions:
            session, rows = read_session(path), []
            for index, again in order(len(session["requests"]), alternate):
                request = session["requests"][index]
                for name, url in urls.items():
                    r = replay_request(url, request["path"], request["body"], max_tokens)
                    rows.append({"request": index + 1, "again": again, "config": name, "ttft_s": r.ttft_s,
                                 "total_s": r.total_s, "prompt_tokens": r.prompt_tokens,
                                 "cached_tokens": r.cached_tokens, "output_tokens": r.output_tokens,
                                 "tokens_per_pass": r.speculation.get("tokens_per_pass", 0.0),
                                 "acceptance": acceptance(r.speculation)})
                    print(json.dumps(rows[-1]), file=sys.stderr)
            results["sessions"][session["client"]] = rows
    results["load_after"] = os.getloadavg()
    return results


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per request and configuration (not the requests sent again), with the time to the first
    token against the 'standard, cache' server's for the same request."""
    lines = ["| request | configuration | prompt tokens | cached | answer tokens | first token or end (s) | "
             "vs standard, cache | tokens/pass | drafted by (tokens verified, acceptance) |", "| --- " * 9 + "|"]
    rows = [r for r in rows if not r["again"]]
    base = {r["request"]: r["ttft_s"] for r in rows if r["config"] == "standard, cache"}
    for r in rows:
        lines.append(f"| {r['request']} | {r['config']} | {r['prompt_tokens']} | {r['cached_tokens']} | "
                     f"{r['output_tokens']} | {r['ttft_s']:.2f} | {r['ttft_s'] / base[r['request']]:.2f} | "
                     f"{r['tokens_per_pass']:.2f} | {r['acceptance']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="the model each server serves")
    parser.add_argument("--max-tokens", type=int, default=128, help="each answer's cap")
    parser.add_argument("--session", type=Path, action="append", help="a session file (default: the recorded ones)")
    parser.add_argument("--alternate", type=int, help="send this request (1-based) again before each later one")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    results = run(args.target, args.max_tokens, args.session or sorted(SESSIONS.glob("*.json.xz")), args.alternate)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"load average before {results['load_before']}, after {results['load_after']}")
    for client, rows in results["sessions"].items():
        print(f"\n{client}\n\n{table(rows)}")


if __name__ == "__main__":
    main()
