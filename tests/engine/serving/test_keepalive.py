"""A stream says how far the prompt's reading has come while it reads, and stays alive for clients that watch bytes or events
(issue 35: agents drop a silent connection)."""

import json
import re
import threading

import anthropic
import httpx
import pytest

from engine.params import GenerationParams
from engine.serving.listener import RunningServer, bind
from engine.serving.server import create_app
from tests.engine.serving.scripted import ScriptedRunner


def question(topic: str) -> list[dict[str, str]]:
    """A prompt of its own per request, so the prompt cache does not read it for the next one."""
    return [{"role": "user", "content": f"Tell me about {topic}, the ships that sail on it and the fish below it."}]

PROGRESS = re.compile(r": reading the prompt \(target\): (\d+) of (\d+) tokens")


@pytest.fixture(scope="module")
def chunked_server(tiny_engine):
    """A server whose pair reads prompts 4 tokens a pass, so a short prompt takes several passes."""
    defaults = GenerationParams.preset("greedy", drafter="lookup", prefill_step_size=4)
    server = RunningServer(create_app(tiny_engine, defaults), bind("127.0.0.1", 0))
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("path, body", [
    ("/v1/chat/completions", {"messages": question("the sea"), "max_tokens": 3, "stream": True}),
    ("/v1/messages", {"messages": question("the lake"), "max_tokens": 3, "stream": True}),
    ("/v1/responses", {"input": question("the river"), "max_output_tokens": 3, "stream": True}),
])
def test_a_stream_reports_the_prompts_reading_as_comments_up_to_its_last_token(chunked_server, path, body) -> None:
    with httpx.stream("POST", f"http://127.0.0.1:{chunked_server.port}{path}", json=body, timeout=60) as response:
        lines = [line for line in response.iter_lines() if line]
    progress = [(int(m[1]), int(m[2])) for line in lines if (m := PROGRESS.fullmatch(line))]
    counts = [processed for processed, _ in progress]
    assert response.status_code == 200 and len(progress) > 2
    processed, total = progress[-1]
    assert counts == sorted(counts) and total - processed <= 1  # the first round reads the prompt's last token


@pytest.fixture(scope="module")
def eventful_server(tiny_engine):
    """`chunked_server`, sending its progress event whenever it sends anything (the 2 minutes made 0)."""
    defaults = GenerationParams.preset("greedy", drafter="lookup", prefill_step_size=4)
    server = RunningServer(create_app(tiny_engine, defaults, progress_s=0.0), bind("127.0.0.1", 0))
    server.start()
    yield server
    server.stop()


def _events(lines: list[str]) -> list[dict]:
    return [json.loads(line.removeprefix("data: ")) for line in lines if line.startswith("data: ")]


def test_an_anthropic_stream_sends_message_deltas_without_a_stop_reason_while_the_prompt_is_read(eventful_server) -> None:
    """Claude Code's watchdog counts events, neither comments nor pings: 5 minutes of prompt reading without one
    and it gives up. A message_delta with no stop reason yet, carrying message_start's usage, is an event."""
    body = {"messages": question("the bay"), "max_tokens": 3, "stream": True}
    with httpx.stream("POST", f"http://127.0.0.1:{eventful_server.port}/v1/messages", json=body, timeout=60) as response:
        events = _events([line for line in response.iter_lines() if line])
    kinds = [event["type"] for event in events]
    first_block = kinds.index("content_block_start")
    early = [event for event in events[1:first_block] if event["type"] == "message_delta"]
    assert kinds[0] == "message_start" and len(early) > 2 and set(kinds[1:first_block]) == {"message_delta"}
    assert all(e["delta"] == {"stop_reason": None, "stop_sequence": None} for e in early)
    assert all(e["usage"] == events[0]["message"]["usage"] for e in early)
    assert kinds[-2:] == ["message_delta", "message_stop"] and events[-2]["delta"]["stop_reason"] == "max_tokens"


def test_inside_a_block_the_progress_event_is_an_empty_delta_of_that_block(eventful_server) -> None:
    """Mid-answer (a stretch that may be a call is held back while the model writes it), a message_delta inside an
    open block would break the stream's order: the progress event there is an empty delta of the open block."""
    body = {"messages": question("the pond"), "max_tokens": 8, "stream": True}
    with httpx.stream("POST", f"http://127.0.0.1:{eventful_server.port}/v1/messages", json=body, timeout=60) as response:
        events = _events([line for line in response.iter_lines() if line])
    kinds = [event["type"] for event in events]
    inside = events[kinds.index("content_block_start") + 1:kinds.index("content_block_stop")]
    empty = [e for e in inside if e["type"] == "content_block_delta" and e["delta"] == {"type": "text_delta", "text": ""}]
    assert {e["type"] for e in inside} == {"content_block_delta"} and empty


def test_the_anthropic_sdk_accumulates_the_same_message_through_the_progress_events(eventful_server) -> None:
    base_url = f"http://127.0.0.1:{eventful_server.port}"
    client = anthropic.Anthropic(base_url=base_url, api_key="unused", max_retries=0)
    request = {"model": "tiny-target", "messages": question("the harbour"), "max_tokens": 6}
    with client.messages.stream(**request) as stream:
        seen = [event.type for event in stream]
        streamed = stream.get_final_message()
    whole = client.messages.create(**request)
    assert seen.index("message_delta") < seen.index("content_block_start")  # it went through the progress events
    assert [(b.type, b.text) for b in streamed.content] == [(b.type, b.text) for b in whole.content]
    assert streamed.stop_reason == whole.stop_reason == "max_tokens"
    assert streamed.usage.output_tokens == 6
    assert streamed.usage.input_tokens + streamed.usage.cache_read_input_tokens == whole.usage.input_tokens + whole.usage.cache_read_input_tokens


def test_a_stream_dropped_while_its_prompt_is_read_leaves_what_was_read_to_the_retry(chunked_server) -> None:
    """Claude Code gives up on a stream after 5 minutes without an event and sends the request again, not streamed,
    its title request perhaps between: the retry starts from the chunks the dropped stream read."""
    base = f"http://127.0.0.1:{chunked_server.port}"
    body = {"messages": question("the ocean " + "and its currents " * 60), "max_tokens": 3, "stream": True}
    with httpx.stream("POST", f"{base}/v1/messages", json=body, timeout=60) as response:
        # enough that the prompt cache shelves it when the title request comes (SHELVE_AFTER beyond what they share)
        read = next(int(m[1]) for line in response.iter_lines() if (m := PROGRESS.fullmatch(line)) and int(m[1]) >= 100)
    client = anthropic.Anthropic(base_url=base, api_key="unused", max_retries=0)
    client.messages.create(model="tiny-target", messages=question("a pond"), max_tokens=2)  # the title request
    retry = client.messages.create(model="tiny-target", messages=body["messages"], max_tokens=3)
    assert retry.usage.cache_read_input_tokens >= read


def test_an_anthropic_streams_message_start_counts_the_tokens_the_prompt_cache_held(chunked_server) -> None:
    """Agents (and a person watching a retry) learn from message_start that the prompt is not read from scratch."""
    first = question("the fjord")
    follow_up = [*first, {"role": "assistant", "content": "Cold and deep."}, {"role": "user", "content": "And its birds?"}]
    starts, lasts = [], []
    for messages in (first, follow_up):
        body = {"messages": messages, "max_tokens": 2, "stream": True}
        with httpx.stream("POST", f"http://127.0.0.1:{chunked_server.port}/v1/messages", json=body, timeout=60) as response:
            events = _events([line for line in response.iter_lines() if line])
        starts.append(events[0]["message"]["usage"])
        lasts.append(events[-2]["usage"])
    assert starts[0]["cache_read_input_tokens"] == lasts[0]["cache_read_input_tokens"]
    assert starts[1]["cache_read_input_tokens"] == lasts[1]["cache_read_input_tokens"] > 0
    assert starts[1]["input_tokens"] == lasts[1]["input_tokens"]


class HeldRunner(ScriptedRunner):
    """A scripted runner whose job starts only once `release` is set, as one queued behind another."""

    def __init__(self, tokenizer) -> None:
        super().__init__(tokenizer, ["The bay is calm."])
        self.release = threading.Event()

    def _run(self, job) -> None:
        self.release.wait(60)
        super()._run(job)


def test_an_anthropic_stream_queued_past_the_progress_interval_begins_and_keeps_sending_events(tool_target) -> None:
    """Claude Code's watchdog needs an event every 5 minutes from the moment it asks, and a request can wait that
    long in the queue behind another before its job starts: the stream begins (message_start, its prompt not yet
    counted) once it has waited the progress interval, and sends progress events while it waits."""
    runner = HeldRunner(tool_target.tokenizer)
    server = RunningServer(create_app(runner, GenerationParams.preset("greedy"), keepalive_s=0.05, progress_s=0.0),
                           bind("127.0.0.1", 0))
    server.start()
    body = {"model": "tiny-tools", "messages": question("the bay"), "max_tokens": 20, "stream": True}
    events: list[dict] = []
    try:
        with httpx.stream("POST", f"http://127.0.0.1:{server.port}/v1/messages", json=body, timeout=60) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line.removeprefix("data: ")))
                if not runner.release.is_set() and [e["type"] for e in events][:3] == ["message_start", "message_delta", "message_delta"]:
                    assert not runner.prompts  # all of it before the job started
                    runner.release.set()
    finally:
        runner.release.set()
        server.stop()
    kinds = [event["type"] for event in events]
    assert kinds[0] == "message_start" and events[0]["message"]["usage"]["input_tokens"] == 0
    assert "content_block_start" in kinds and kinds[-2:] == ["message_delta", "message_stop"]
    assert events[-2]["usage"]["input_tokens"] > 0 and events[-2]["delta"]["stop_reason"] == "end_turn"
