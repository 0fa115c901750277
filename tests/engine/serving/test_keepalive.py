"""A stream tells how far the prompt's reading has come while it reads (issue 35: agents drop a silent connection)."""

import re

import httpx
import pytest

from engine.params import GenerationParams
from engine.serving.listener import RunningServer, bind
from engine.serving.server import create_app


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
