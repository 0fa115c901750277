"""Claude Code's and Codex CLI's recorded sessions, replayed against `serve` on the tiny tool pair, every run.

The sessions (tests/engine/serving/fixtures/sessions, recorded by tests/benchmarks/record_agent_sessions.py from
the real clients) hold every request each client sent while it read a file and rewrote it: its default system
prompt and tools, a title request, the tool results. Each is sent again through the client's own SDK, so the
answer must be a 200 that parses in that API's shape, and a request that continues an earlier one's conversation
must find that prefix in the prompt cache. The model's answers are the tiny model's, a few tokens each, drafted by
lookup; it is the smallest tool model (`build_long_tool_model`), whose tokenizer learnt the sessions, so that it
reads Claude Code's ~23k-token prompt in seconds.
"""

from __future__ import annotations

import json

import pytest

from engine.decoding.pair import ModelPair
from engine.fixtures.tiny_tool_model import build_long_tool_model
from engine.serving.generation_queue import EngineThread
from tests.benchmarks.agent_replay import SESSIONS, extends, order, read_session, replay
from tests.engine.serving.scripted import GREEDY, serving

MAX_TOKENS = 4
SESSION_FILES = {"claude_code_edit.json.xz": "message", "codex_edit.json.xz": "response"}  # file -> its answers' type


@pytest.fixture(scope="module")
def long_url(tmp_path_factory):
    """A server over the long-context tool model, drafting by lookup."""
    texts = tuple(json.dumps(read_session(SESSIONS / name)["requests"][-1]["body"]) for name in SESSION_FILES)
    target = str(build_long_tool_model(tmp_path_factory.mktemp("long-tools"), texts))
    engine = EngineThread(lambda: ModelPair.load(target), target)
    engine.start()
    try:
        with serving(engine, defaults=GREEDY.replace(drafter="lookup")) as url:
            yield url
    finally:
        engine.stop()


@pytest.mark.parametrize("name, answer_type", SESSION_FILES.items())
def test_a_recorded_session_is_served_and_continued_turns_come_from_the_prompt_cache(long_url, name, answer_type) -> None:
    session = read_session(SESSIONS / name)
    requests = [r["body"] for r in session["requests"]]
    replayed = replay(long_url, session, MAX_TOKENS)
    assert [r.answer.object if answer_type == "response" else r.answer.type for r in replayed] == [answer_type] * len(requests)
    assert all(0 < r.output_tokens <= MAX_TOKENS and r.prompt_tokens > 0 for r in replayed)
    continued = [i for i, body in enumerate(requests) if any(extends(earlier, body) for earlier in requests[:i])]
    assert continued, "the session should hold requests that continue an earlier one"
    assert all(replayed[i].cached_tokens > 0 for i in continued), [(r.prompt_tokens, r.cached_tokens) for r in replayed]


def test_a_request_extends_an_earlier_one_whatever_its_cache_marks() -> None:
    earlier = {"system": "s", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {}}]}]}
    later = {"system": "s", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                                         {"role": "assistant", "content": "yes"}]}
    assert extends(earlier, later)
    assert not extends(later, earlier)
    assert not extends(earlier, {**later, "system": "other"})


def test_the_alternating_request_is_sent_again_before_each_later_turn_but_the_next() -> None:
    assert order(4, 1) == [(0, False), (1, False), (0, True), (2, False), (0, True), (3, False)]
    assert order(2, None) == [(0, False), (1, False)]
