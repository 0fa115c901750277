"""logprobs / top_logprobs through the server in OpenAI's exact shapes, read back by the official client."""

from __future__ import annotations

import openai
import pytest

from engine.decoding.generation import generate_stream
from engine.decoding.pair import ModelPair
from engine.events import TokenEvent, TokenLogprob
from engine.serving.api_error import ApiError
from engine.serving.token_logprobs import TokenNames, completion_logprobs, requested
from tests.engine.serving.scripted import GREEDY

MESSAGES = [{"role": "user", "content": "Tell me about the sea."}]
TOP = 3


@pytest.fixture(scope="module")
def client(tiny_url) -> openai.OpenAI:
    return openai.OpenAI(base_url=tiny_url + "/v1", api_key="unused", max_retries=0)


def engine_logprobs(pair: ModelPair, prompt: object, chat: bool = True) -> list[TokenLogprob]:
    """What the engine itself reports for the server's greedy settings (checked against a plain pass in decoding)."""
    events = generate_stream(pair, prompt, GREEDY.replace(logprobs=TOP, max_tokens=24), chat=chat)
    return [e.logprob for e in events if isinstance(e, TokenEvent)]


def test_what_each_endpoint_asks_for() -> None:
    assert requested({}, "chat") is None and requested({"logprobs": False}, "chat") is None
    assert requested({"logprobs": True}, "chat") == 0
    assert requested({"logprobs": True, "top_logprobs": 5}, "chat") == 5
    assert requested({"logprobs": 2}, "completions") == 2 and requested({}, "completions") is None
    for body, endpoint, param in [({"top_logprobs": 2}, "chat", "top_logprobs"),
                                  ({"logprobs": True, "top_logprobs": 21}, "chat", "top_logprobs"),
                                  ({"logprobs": 6}, "completions", "logprobs"), ({"logprobs": 1}, "chat", "logprobs")]:
        with pytest.raises(ApiError) as refused:
            requested(body, endpoint)
        assert refused.value.status == 400 and refused.value.param == param


def test_a_token_holding_part_of_a_character_is_named_by_its_bytes(tiny_pair: ModelPair) -> None:
    names = TokenNames(tiny_pair.tokenizer, tiny_pair.vocab_width)
    tokens = tiny_pair.tokenizer.encode("café ☕", add_special_tokens=False)
    entries = [names.entry(TokenLogprob(t, -1.0)) for t in tokens]
    assert b"".join(bytes(e["bytes"]) for e in entries).decode() == "café ☕"
    partial = [e for e in entries if e["token"].startswith("bytes:")]
    assert partial and all(e["token"] == "bytes:" + "".join(f"\\x{b:02x}" for b in e["bytes"]) for e in partial)
    assert completion_logprobs(entries[:2], 7)["text_offset"] == [7, 7 + len(entries[0]["token"])]


def test_chat_logprobs_whole_are_the_engines(client: openai.OpenAI, tiny_pair: ModelPair) -> None:
    completion = client.chat.completions.create(model="tiny-target", messages=MESSAGES, max_tokens=24, logprobs=True,
                                                top_logprobs=TOP)
    content = completion.choices[0].logprobs.content
    expected = engine_logprobs(tiny_pair, MESSAGES)
    assert len(content) == len(expected) > 0
    for got, want in zip(content, expected):
        assert got.logprob == pytest.approx(want.logprob, abs=1e-4)
        assert [t.logprob for t in got.top_logprobs] == pytest.approx([lp for _, lp in want.top], abs=1e-4)
        assert got.top_logprobs[0].bytes is not None
    text = b"".join(bytes(t.bytes) for t in content).decode("utf-8", "replace")
    assert text.strip() == completion.choices[0].message.content.strip()


def test_chat_logprobs_streamed_match_the_whole_ones(client: openai.OpenAI) -> None:
    whole = client.chat.completions.create(model="tiny-target", messages=MESSAGES, max_tokens=24, logprobs=True,
                                           top_logprobs=2)
    stream = client.chat.completions.create(model="tiny-target", messages=MESSAGES, max_tokens=24, logprobs=True,
                                            top_logprobs=2, stream=True)
    streamed = [t for chunk in stream if chunk.choices and chunk.choices[0].logprobs
                for t in chunk.choices[0].logprobs.content]
    content = whole.choices[0].logprobs.content
    assert [t.token for t in streamed] == [t.token for t in content]
    assert [t.logprob for t in streamed] == pytest.approx([t.logprob for t in content], abs=1e-4)


def test_no_logprobs_unless_asked(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="tiny-target", messages=MESSAGES, max_tokens=4)
    assert completion.choices[0].logprobs is None


def test_legacy_completions_logprobs(client: openai.OpenAI, tiny_pair: ModelPair) -> None:
    completion = client.completions.create(model="tiny-target", prompt="The sea is", max_tokens=24, logprobs=TOP)
    figures = completion.choices[0].logprobs
    expected = engine_logprobs(tiny_pair, "The sea is", chat=False)
    assert figures.token_logprobs == pytest.approx([lp.logprob for lp in expected], abs=1e-4)
    assert len(figures.tokens) == len(figures.top_logprobs) == len(figures.text_offset) == len(expected)
    assert all(len(top) <= TOP for top in figures.top_logprobs) and figures.text_offset[0] == 0
