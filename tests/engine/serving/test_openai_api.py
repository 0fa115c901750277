"""The OpenAI wire format: each bad body is an ApiError naming its field; good bodies become our settings."""

from __future__ import annotations

import dataclasses
import json

import pytest

from engine.errors import InvalidParameterError, PromptError, PromptTooLongError
from engine.events import GenerationResult, GenerationStats
from engine.params import GenerationParams
from engine.serving.openai_api import ApiError, ApiRequest, ResponseShape, engine_error, parse_body, parse_request, sse
from engine.serving.pieces import ToolCall
from engine.serving.tool_calls import Reply

MODELS = ["tiny-target", "/models/tiny-target"]
DEFAULTS = GenerationParams.preset("greedy")
CHAT = {"messages": [{"role": "user", "content": "Hi"}]}


def parse(body: dict, endpoint: str = "chat") -> ApiRequest:
    return parse_request(body, endpoint, MODELS, DEFAULTS)


def test_settings_and_our_extra_fields_reach_the_params() -> None:
    body = {**CHAT, "temperature": 0.7, "top_p": 0.8, "max_completion_tokens": 33, "stop": "END", "seed": 5,
            "num_draft": 6, "drafter": "lookup", "mode": "standard", "top_k": 40, "min_p": 0.05, "adaptive": False,
            "ssd": True, "fanout": 2, "lenience": 0.1, "history": False}
    p = parse(body).params
    assert (p.ssd, p.fanout, p.lenience, p.history) == (True, 2, 0.1, False)
    assert (p.temperature, p.top_p, p.max_tokens, p.stop, p.seed) == (0.7, 0.8, 33, ("END",), 5)
    assert (p.num_draft, p.drafter, p.mode, p.top_k, p.min_p, p.adaptive) == (6, "lookup", "standard", 40, 0.05, False)


def test_absent_fields_keep_the_servers_defaults_and_max_tokens_wins_over_max_completion_tokens() -> None:
    request = parse({**CHAT, "max_tokens": 7, "max_completion_tokens": 9, "n": None, "temperature": None})
    assert request.params == DEFAULTS.replace(max_tokens=7)
    assert request.model == "tiny-target" and request.chat and not request.stream


def test_the_load_name_is_accepted_as_the_model_and_answers_with_the_display_name() -> None:
    assert parse({**CHAT, "model": "/models/tiny-target"}).model == "tiny-target"


def test_content_parts_are_joined_and_developer_is_a_system_message() -> None:
    body = {"messages": [{"role": "developer", "content": "Be brief."},
                         {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}
    assert parse(body).prompt == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "ab"}]


def test_completions_take_a_prompt_string_or_a_one_string_list() -> None:
    assert parse({"prompt": "Once"}, "completions").prompt == "Once"
    assert parse({"prompt": ["Once"]}, "completions").prompt == "Once"
    assert not parse({"prompt": "Once"}, "completions").chat


def test_completions_take_a_prompt_of_token_ids_alone_or_as_a_batch_of_one() -> None:
    assert parse({"prompt": [7, 0, 12]}, "completions").prompt == [7, 0, 12]
    assert parse({"prompt": [[7, 0, 12]]}, "completions").prompt == [7, 0, 12]
    for bad in ([], [[]], [1, "a"], [True], [[1], [2]], ["a", "b"], 3):
        with pytest.raises(ApiError) as caught:
            parse({"prompt": bad}, "completions")
        assert caught.value.param == "prompt" and "token ids" in caught.value.message


@pytest.mark.parametrize(
    "body, status, param, code",
    [
        ({}, 400, "messages", None),
        ({"messages": []}, 400, "messages", None),
        ({"messages": [{"role": "robot", "content": "x"}]}, 400, "messages[0].role", None),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400, "messages[0].content[0]", None),
        ({"messages": [{"role": "user", "content": [{"type": "audio"}]}]}, 400, "messages[0].content", None),
        ({**CHAT, "model": "gpt-4"}, 404, "model", "model_not_found"),
        ({**CHAT, "temperature": -1}, 400, "temperature", "invalid_value"),
        ({**CHAT, "temperature": 3}, 400, "temperature", None),
        ({**CHAT, "temperature": "hot"}, 400, "temperature", None),
        ({**CHAT, "top_p": 0}, 400, "top_p", "invalid_value"),
        ({**CHAT, "max_tokens": 0}, 400, "max_tokens", "invalid_value"),
        ({**CHAT, "max_tokens": 2.5}, 400, "max_tokens", None),
        ({**CHAT, "n": 2}, 400, "n", None),
        ({**CHAT, "stream": "yes"}, 400, "stream", None),
        ({**CHAT, "stop": ["a", ""]}, 400, "stop", None),
        ({**CHAT, "stop": ["a", "b", "c", "d", "e"]}, 400, "stop", None),
        ({**CHAT, "drafter": "oracle"}, 400, "drafter", None),
        ({**CHAT, "num_draft": 0}, 400, "num_draft", "invalid_value"),
        ({**CHAT, "seed": True}, 400, "seed", None),
    ],
)
def test_each_bad_body_is_refused_naming_its_field(body, status, param, code) -> None:
    with pytest.raises(ApiError) as caught:
        parse(body)
    e = caught.value
    assert (e.status, e.param, e.code) == (status, param, code)
    assert set(e.body()["error"]) == {"message", "type", "param", "code"} and e.message


def test_a_completion_without_a_prompt_is_refused() -> None:
    with pytest.raises(ApiError) as caught:
        parse({"prompt": ""}, "completions")
    assert caught.value.param == "prompt"


@pytest.mark.parametrize("raw", [b"{bad", b"[1, 2]", b"", b"\xff"])
def test_a_body_that_is_not_a_json_object_is_refused(raw) -> None:
    with pytest.raises(ApiError) as caught:
        parse_body(raw)
    assert caught.value.status == 400


def test_engine_errors_become_400s_and_a_long_prompt_says_context_length_exceeded() -> None:
    long = engine_error(PromptTooLongError("The prompt is 2000 tokens but tiny reads at most 1024. Shorten it.", 2000, 1024))
    assert (long.status, long.code, long.param) == (400, "context_length_exceeded", "messages")
    assert long.message == "The prompt is 2000 tokens but tiny reads at most 1024. Shorten it."
    assert engine_error(PromptError("The prompt is empty.")).code is None
    assert engine_error(InvalidParameterError("needs a draft model")).code == "invalid_value"


def result(text: str = "Hello there", finish: str = "length") -> Reply:
    stats = GenerationStats(prompt_tokens=10, generated_tokens=6, rounds=3, drafted=8, accepted=3, generation_s=0.5,
                            cached_prompt_tokens=4)
    return Reply(text, [], GenerationResult(text, [1] * 6, ["accepted"] * 6, "speculative", finish, stats))  # type: ignore[arg-type]


def test_a_whole_chat_response_carries_usage_and_speculation() -> None:
    body = ResponseShape(parse(CHAT)).whole(result())
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Hello there"}
    assert body["usage"] == {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16,
                             "prompt_tokens_details": {"cached_tokens": 4}}
    spec = body["speculation"]
    assert (spec["rounds"], spec["drafted"], spec["accepted"], spec["tokens_per_pass"]) == (3, 8, 3, 2.0)
    assert spec["acceptance_rate"] == 0.375 and spec["tokens_per_second"] == 12.0


def test_the_context_limit_finishes_as_length() -> None:
    assert ResponseShape(parse(CHAT)).whole(result(finish="context"))["choices"][0]["finish_reason"] == "length"


def test_stream_chunks_share_one_id_and_the_usage_chunk_comes_only_when_asked() -> None:
    shape = ResponseShape(parse({**CHAT, "stream": True}))
    first, piece = shape.chunk(first=True), shape.chunk(text="Hi")
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert piece["choices"][0]["delta"] == {"content": "Hi"} and piece["id"] == first["id"]
    (last,) = shape.last_chunks(result())
    assert last["choices"][0]["finish_reason"] == "length" and last["speculation"]["drafted"] == 8
    asked = ResponseShape(parse({**CHAT, "stream": True, "stream_options": {"include_usage": True}}))
    assert asked.last_chunks(result())[-1]["choices"] == []


def test_completion_chunks_are_text_completions() -> None:
    chunk = ResponseShape(parse({"prompt": "a"}, "completions")).chunk(text="b")
    assert chunk["object"] == "text_completion" and chunk["choices"][0]["text"] == "b"


def test_sse_frames_json_and_done() -> None:
    assert sse({"a": 1}) == b'data: {"a": 1}\n\n'
    assert sse("[DONE]") == b"data: [DONE]\n\n"
    assert json.loads(sse({"t": "é"})[6:]) == {"t": "é"}


# Tools: the request side.

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def test_tools_and_a_named_choice_reach_the_job() -> None:
    body = {**CHAT, "tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}
    tooling = parse(body).tooling
    assert tooling.tools == [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    assert (tooling.choice.mode, tooling.choice.name) == ("named", "get_weather")
    assert parse(CHAT).tooling is None and parse({**CHAT, "tools": [WEATHER]}).tooling.choice.mode == "auto"


def test_parallel_tool_calls_false_asks_for_one_call_at_most() -> None:
    tools = {**CHAT, "tools": [WEATHER]}
    assert parse({**tools, "parallel_tool_calls": False}).tooling.one_call
    assert not parse(tools).tooling.one_call and not parse({**tools, "parallel_tool_calls": True}).tooling.one_call
    with pytest.raises(ApiError) as refused:
        parse({**tools, "parallel_tool_calls": "no"})
    assert refused.value.param == "parallel_tool_calls"


def test_history_calls_and_tool_results_are_kept_for_the_template() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    body = {"messages": [{"role": "user", "content": "Weather?"},
                         {"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "call_1", "content": "22 C"}]}
    _, assistant, tool = parse(body).prompt
    assert assistant == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
    assert tool == {"role": "tool", "content": "22 C", "tool_call_id": "call_1"}


@pytest.mark.parametrize(
    "body, param",
    [
        ({**CHAT, "tools": [{"type": "function"}]}, "tools[0]"),
        ({**CHAT, "tools": [{"type": "function", "function": {"description": "no name"}}]}, "tools[0]"),
        ({**CHAT, "tool_choice": "required"}, "tools"),
        ({**CHAT, "tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "other"}}}, "tool_choice"),
        ({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}]},
         "messages[0].tool_calls[0]"),
    ],
)
def test_bad_tools_are_refused_naming_the_field(body, param) -> None:
    with pytest.raises(ApiError) as caught:
        parse(body)
    assert (caught.value.status, caught.value.param) == (400, param)


def test_calls_make_a_tool_calls_message_and_finish_reason() -> None:
    reply = result("")
    reply.result = dataclasses.replace(reply.result, finish_reason="stop")
    reply.calls.append(ToolCall("get_weather", '{"city": "Paris"}', "call_1"))
    choice = ResponseShape(parse(CHAT)).whole(reply)["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
