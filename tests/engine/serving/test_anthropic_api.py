"""Anthropic's Messages API: the request translation, and the server driven by the official `anthropic` client.

Greedy text must equal the engine's own `generate` on the same conversation; tool use is scripted on the tiny
tool model (tests/engine/serving/scripted.py), since random weights never call a tool.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import anthropic
import httpx
import pytest

from engine.decoding.generation import generate
from engine.serving.anthropic_api import parse_request
from engine.serving.openai_api import ApiError
from tests.engine.serving.scripted import FINAL_ANSWER, GREEDY, WEATHER_CALL, ScriptedRunner, serving
from tests.helpers import agent_request

MODELS = ["tiny-target"]
FIXTURES = Path(__file__).parent / "fixtures"
QUESTION = [{"role": "user", "content": "Tell me about the sea."}]
WEATHER = {"name": "get_weather", "description": "The weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def parse(body: dict):
    return parse_request({"max_tokens": 16, **body}, MODELS, GREEDY)


def test_system_blocks_tool_use_and_tool_results_become_chat_messages() -> None:
    body = {"system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}], "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
                                          {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "22 C"},
                                     {"type": "text", "text": "And tomorrow?"}]}]}
    assert parse(body).prompt == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "22 C"},
        {"role": "user", "content": "And tomorrow?"},
    ]


def test_tools_take_input_schema_and_tool_choice_maps_to_ours() -> None:
    request = parse({"messages": QUESTION, "tools": [WEATHER], "tool_choice": {"type": "tool", "name": "get_weather"},
                     "stop_sequences": ["END"], "temperature": 0.5, "top_k": 20})
    assert request.tooling.tools[0]["function"] == {"name": "get_weather", "description": "The weather in a city",
                                                    "parameters": WEATHER["input_schema"]}
    assert (request.tooling.choice.mode, request.tooling.choice.name) == ("named", "get_weather")
    assert (request.params.stop, request.params.temperature, request.params.top_k, request.params.max_tokens) == (("END",), 0.5, 20, 16)
    assert parse({"messages": QUESTION, "tools": [WEATHER], "tool_choice": {"type": "any"}}).tooling.choice.mode == "required"
    single = {"type": "auto", "disable_parallel_tool_use": True}
    assert parse({"messages": QUESTION, "tools": [WEATHER], "tool_choice": single}).tooling.one_call
    assert not parse({"messages": QUESTION, "tools": [WEATHER]}).tooling.one_call


@pytest.mark.parametrize(
    "body, param",
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "system", "content": "x"}]}, "messages"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages.0.role"),
        ({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}, "messages.0.content.0.source"),
        ({"messages": [{"role": "user", "content": [{"type": "document"}]}]}, "messages.0.content.0"),
        ({"messages": QUESTION, "tools": [{"name": "web_search"}]}, "tools.0:"),
        ({"messages": QUESTION, "output_config": {"format": {"type": "text"}}}, "output_config.format"),
        ({"messages": QUESTION, "tools": [WEATHER], "tool_choice": {"type": "tool", "name": "other"}}, "tool_choice"),
        ({"messages": QUESTION, "stop_sequences": [""]}, "stop"),
    ],
)
def test_bad_bodies_are_refused_naming_the_field(body, param) -> None:
    with pytest.raises(ApiError) as caught:
        parse(body)
    assert (caught.value.status, caught.value.param) == (400, param)


def test_a_system_message_after_the_users_text_goes_before_it() -> None:
    """Claude Code's agents list follows the question: the question still comes last before the model answers."""
    agents = {"role": "system", "content": [{"type": "text", "text": "Agents: none."}]}
    body = {"system": "Be brief.", "messages": [QUESTION[0], agents, {"role": "assistant", "content": "Calm."}]}
    assert parse(body).prompt == [{"role": "system", "content": "Be brief."}, {"role": "system", "content": "Agents: none."},
                                  QUESTION[0], {"role": "assistant", "content": "Calm."}]


def test_a_system_message_after_tool_results_stays_after_them() -> None:
    """Tool results answer the calls just before them: a system turn never comes between the two."""
    called = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "42"},
                                           {"type": "text", "text": "Go on."}]}
    reminder = {"role": "system", "content": "Be careful."}
    prompt = parse({"messages": [QUESTION[0], called, results, reminder]}).prompt
    assert [m["role"] for m in prompt] == ["user", "assistant", "tool", "system", "user"]
    assert (prompt[3]["content"], prompt[4]["content"]) == ("Be careful.", "Go on.")


def test_server_tools_are_left_out_with_a_note_and_client_tools_kept() -> None:
    tooling = parse({"messages": QUESTION, "tools": [{"type": "web_search_20250305", "name": "web_search"}, WEATHER]}).tooling
    assert [t["function"]["name"] for t in tooling.tools] == ["get_weather"]
    assert tooling.left_out == ("web_search (a server tool of type 'web_search_20250305': this server runs none)",)


def test_output_config_format_is_the_answers_schema_and_its_effort_is_ignored() -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    request = parse({"messages": QUESTION, "output_config": {"effort": "high", "format": {"type": "json_schema", "schema": schema}}})
    assert json.loads(request.params.json_schema) == schema
    assert parse({"messages": QUESTION, "output_config": {"effort": "low"}}).params.json_schema is None


def test_an_images_place_in_a_tool_result_is_named_rather_than_refused() -> None:
    blocks = [{"type": "text", "text": "the file:"}, {"type": "image", "source": {"type": "base64", "data": ""}}]
    body = {"messages": [QUESTION[0], {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": blocks}]}]}
    assert parse(body).prompt[-1] == {"role": "tool", "tool_call_id": "t1", "content": "the file:[image block left out]"}


def billed(cch: str) -> dict:
    """Claude Code's billing block, whose values change with the request, as the first system block."""
    return {"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.1.197.c0a; cc_entrypoint=cli; cch={cch};"}


def test_claude_codes_billing_header_is_not_given_to_the_model() -> None:
    rules = {"type": "text", "text": "You are an agent."}
    assert parse({"system": [billed("36ee5"), rules], "messages": QUESTION}).prompt[0] == {"role": "system", "content": "You are an agent."}
    as_string = billed("36ee5")["text"] + "\nYou are an agent."
    assert parse({"system": as_string, "messages": QUESTION}).prompt[0] == {"role": "system", "content": "You are an agent."}
    assert parse({"system": [billed("36ee5")], "messages": QUESTION}).prompt == [QUESTION[0]]


@pytest.mark.parametrize("fixture", ["claude_code_messages.json", "claude_code_title.json"])
def test_claude_codes_recorded_requests_parse(fixture) -> None:
    """Claude Code 2.1.197's own bodies (recorded against a capturing server): system blocks with cache_control, a
    system turn among the messages, thinking, context_management, output_config, metadata and 25 tools."""
    body = json.loads((FIXTURES / fixture).read_text())
    request = parse_request(body, [body["model"]], GREEDY)
    roles = ["system", "system", "user"] if fixture == "claude_code_messages.json" else ["system", "user"]
    assert request.stream and [m["role"] for m in request.prompt] == roles
    assert len(request.tooling.tools) == len(body["tools"]) if body["tools"] else request.tooling is None


def test_max_tokens_is_required_as_anthropic_requires_it() -> None:
    with pytest.raises(ApiError, match="max_tokens"):
        parse_request({"messages": QUESTION}, MODELS, GREEDY)


# Through the server, on the tiny pair (greedy, speculative with the draft model).


@pytest.fixture
def base(tiny_url) -> str:
    return tiny_url


@pytest.fixture
def client(base) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base, api_key="unused", max_retries=0)


def test_a_message_equals_generate_with_usage_and_speculation(client, tiny_pair) -> None:
    expected = generate(QUESTION, tiny_pair, GREEDY.replace(max_tokens=24))
    message = client.messages.create(model="tiny-target", max_tokens=24, messages=QUESTION, extra_body={"adaptive": False})
    assert [block.type for block in message.content] == ["text"] and message.content[0].text == expected.text
    assert message.stop_reason == ("end_turn" if expected.finish_reason == "stop" else "max_tokens")
    usage = message.usage
    assert (usage.input_tokens + usage.cache_read_input_tokens, usage.output_tokens) == (expected.stats.prompt_tokens, len(expected.tokens))
    spec = message.model_extra["speculation"]
    assert spec["drafter"] == "model" and spec["drafted"] >= spec["accepted"] > 0


def test_a_last_assistant_message_is_continued_from_its_last_character(client, tiny_pair) -> None:
    """Anthropic's prefill: the reply goes on from the assistant's text as the raw text of the turn so far would, its
    first token's space kept (it was answered in a new turn after the prefill)."""
    prefill = "The sea is"
    raw = tiny_pair.tokenizer.apply_chat_template(QUESTION, add_generation_prompt=True, tokenize=False) + prefill
    expected = generate(raw, tiny_pair, GREEDY.replace(max_tokens=12), chat=False)
    message = client.messages.create(model="tiny-target", max_tokens=12, messages=[*QUESTION, {"role": "assistant", "content": prefill}],
                                     extra_body={"adaptive": False})
    assert message.content[0].text == expected.text and expected.tokens
    assert tiny_pair.tokenizer.decode(expected.tokens) == expected.text  # exactly its tokens, a leading space kept


def test_the_prompt_caches_tokens_are_reported_as_cache_reads(client) -> None:
    """A repeated prompt is read from the prompt cache: Anthropic counts those tokens apart from input_tokens."""
    first, second = (client.messages.create(model="tiny-target", max_tokens=2, messages=QUESTION).usage for _ in range(2))
    assert second.cache_read_input_tokens > 0 and second.cache_creation_input_tokens == 0
    assert second.input_tokens + second.cache_read_input_tokens == first.input_tokens + first.cache_read_input_tokens


def test_an_agent_returning_after_another_prompt_reads_its_prefix_from_the_cache(client) -> None:
    """Prompts A, B, A (a main loop, a title request, the main loop again): the third is a cache read but its last token."""
    requests = [agent_request(name) for name in ("main", "title", "main")]
    usages = [client.messages.create(model="tiny-target", max_tokens=2, system=system["content"], messages=[question]).usage
              for system, question in requests]
    assert usages[1].cache_read_input_tokens < 20
    assert (usages[2].cache_read_input_tokens, usages[2].input_tokens) == (usages[0].input_tokens + usages[0].cache_read_input_tokens - 1, 1)


def test_requests_whose_billing_headers_differ_share_the_cached_system_prompt(client) -> None:
    """Claude Code's `cch` changes with every request: the prompt cache still reuses all the system prompt behind it."""
    system, question = agent_request("main")
    usages = [client.messages.create(model="tiny-target", max_tokens=2, messages=[question],
                                     system=[billed(cch), {"type": "text", "text": system["content"]}]).usage
              for cch in ("36ee5", "0aaa9")]
    assert (usages[1].cache_read_input_tokens, usages[1].input_tokens) == (usages[0].input_tokens + usages[0].cache_read_input_tokens - 1, 1)


def test_a_streamed_message_sends_anthropics_events_in_order(client, base, tiny_pair) -> None:
    expected = generate(QUESTION, tiny_pair, GREEDY.replace(max_tokens=24))
    with client.messages.stream(model="tiny-target", max_tokens=24, messages=QUESTION) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == expected.text == final.content[0].text and final.usage.output_tokens == len(expected.tokens)
    body = {"model": "tiny-target", "max_tokens": 24, "messages": QUESTION, "stream": True}
    with httpx.stream("POST", base + "/v1/messages", json=body, timeout=60) as response:
        lines = list(response.iter_lines())
    names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    [message_delta] = [json.loads(line[6:]) for line in lines if line.startswith('data: {"type": "message_delta"')]
    assert message_delta["speculation"]["drafter"] == "model"  # the stats ride on the message_delta
    deltas = names.count("content_block_delta")
    assert names == ["message_start", "content_block_start"] + ["content_block_delta"] * deltas + [
        "content_block_stop", "message_delta", "message_stop"] and deltas > 0


def test_a_stop_sequence_is_reported_as_anthropic_reports_it(client, tiny_pair) -> None:
    full = generate(QUESTION, tiny_pair, GREEDY.replace(max_tokens=24)).text
    stop = full[len(full) // 2 :][:3]
    message = client.messages.create(model="tiny-target", max_tokens=24, messages=QUESTION, stop_sequences=[stop, "\x00"])
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", stop)
    assert message.content[0].text == full[: full.index(stop)]
    assert client.messages.create(model="tiny-target", max_tokens=3, messages=QUESTION).stop_reason == "max_tokens"


@pytest.mark.parametrize(
    "body, status, kind",
    [
        (b"{bad", 400, "invalid_request_error"),
        (b'{"model": "tiny-target", "messages": [{"role": "user", "content": "x"}]}', 400, "invalid_request_error"),
        (b'{"model": "claude-x", "max_tokens": 4, "messages": [{"role": "user", "content": "x"}]}', 404, "not_found_error"),
        (b'{"max_tokens": 4, "messages": [{"role": "user", "content": "x"}], "temperature": -1}', 400,
         "invalid_request_error"),
    ],
)
def test_bad_requests_get_anthropics_error_shape_and_the_server_keeps_serving(base, client, body, status, kind) -> None:
    response = httpx.post(base + "/v1/messages", content=body)
    assert response.status_code == status
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == kind and error["error"]["message"]
    assert client.messages.create(model="tiny-target", max_tokens=3, messages=QUESTION).content[0].text is not None


def test_the_client_raises_its_own_errors(client) -> None:
    with pytest.raises(anthropic.NotFoundError):
        client.messages.create(model="not-served-here", max_tokens=4, messages=QUESTION)


@pytest.mark.parametrize("stream", [False, True])
def test_a_prompt_too_long_for_the_context_is_refused_in_anthropics_words(client, stream) -> None:
    """Claude Code compacts the conversation and sends it again on exactly this message."""
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="tiny-target", max_tokens=4, messages=[{"role": "user", "content": "word " * 1100}],
                               stream=stream)
    assert re.fullmatch(r"prompt is too long: \d+ tokens > 1024 maximum", refused.value.body["error"]["message"])


def test_a_keyed_server_takes_x_api_key_or_a_bearer_token(tiny_engine) -> None:
    with serving(tiny_engine, api_key="s3cret") as url:
        with pytest.raises(anthropic.AuthenticationError):
            anthropic.Anthropic(base_url=url, api_key="wrong", max_retries=0).messages.create(
                model="tiny-target", max_tokens=2, messages=QUESTION)
        assert httpx.post(url + "/v1/messages", json={}).json()["error"]["type"] == "authentication_error"
        assert anthropic.Anthropic(base_url=url, api_key="s3cret").messages.create(
            model="tiny-target", max_tokens=2, messages=QUESTION).content
        assert anthropic.Anthropic(base_url=url, auth_token="s3cret").messages.create(
            model="tiny-target", max_tokens=2, messages=QUESTION).content


# Tool use, scripted on the tool model.

ASKED = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture
def tool_client(tool_target):
    runner = ScriptedRunner(tool_target.tokenizer, [f"Let me check.\n{WEATHER_CALL}", FINAL_ANSWER] * 2)
    with serving(runner) as url:
        yield runner, anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)


def _result_turn(tool_use) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "22 degrees, sunny"}]}


def test_a_tool_use_round_trip(tool_client) -> None:
    runner, client = tool_client
    first = client.messages.create(model="tiny-tools", max_tokens=100, messages=ASKED, tools=[WEATHER])
    assert first.stop_reason == "tool_use" and [b.type for b in first.content] == ["text", "tool_use"]
    tool_use = first.content[1]
    assert (tool_use.name, tool_use.input) == ("get_weather", {"city": "Paris"})
    history = ASKED + [{"role": "assistant", "content": [b.model_dump() for b in first.content]}, _result_turn(tool_use)]
    final = client.messages.create(model="tiny-tools", max_tokens=100, messages=history, tools=[WEATHER])
    assert (final.content[0].text, final.stop_reason) == (FINAL_ANSWER, "end_turn")
    assert '"arguments": {"city": "Paris"}' in runner.prompts[1] and "22 degrees, sunny" in runner.prompts[1]


def test_a_streamed_tool_use_round_trip(tool_client) -> None:
    runner, client = tool_client
    with client.messages.stream(model="tiny-tools", max_tokens=100, messages=ASKED, tools=[WEATHER]) as stream:
        events = [event.type for event in stream]
        first = stream.get_final_message()
    assert "input_json" in events and first.stop_reason == "tool_use"
    tool_use = first.content[-1]
    assert (tool_use.type, tool_use.name, tool_use.input) == ("tool_use", "get_weather", {"city": "Paris"})
    history = ASKED + [{"role": "assistant", "content": [b.model_dump() for b in first.content]}, _result_turn(tool_use)]
    with client.messages.stream(model="tiny-tools", max_tokens=100, messages=history, tools=[WEATHER]) as stream:
        assert "".join(stream.text_stream) == FINAL_ANSWER
    assert json.dumps({"city": "Paris"}) in runner.prompts[1]


def test_a_required_tool_use_not_made_is_an_error_in_anthropics_shape(tool_target) -> None:
    runner = ScriptedRunner(tool_target.tokenizer, ["It is sunny."] * 2 + [FINAL_ANSWER])
    with serving(runner) as url:
        client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
        with pytest.raises(anthropic.InternalServerError, match="It is sunny"):
            client.messages.create(model="tiny-tools", max_tokens=50, messages=ASKED, tools=[WEATHER],
                                   tool_choice={"type": "any"})
        with pytest.raises(anthropic.APIStatusError, match="tool_call_missing|a tool call"):
            with client.messages.stream(model="tiny-tools", max_tokens=50, messages=ASKED, tools=[WEATHER],
                                        tool_choice={"type": "any"}) as stream:
                assert "".join(stream.text_stream) == ""  # nothing streamed while the call is awaited
        assert client.messages.create(model="tiny-tools", max_tokens=50, messages=ASKED).content[0].text == FINAL_ANSWER


READ_CALL = '<tool_call>\n{"name": "Read", "arguments": {"file_path": "/home/user/project/notes.txt"}}\n</tool_call>'


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "not streamed, as Claude Code retries after its watchdog"])
def test_claude_codes_recorded_request_replayed_gives_a_tool_use_and_counts_its_tokens(tool_target, streamed) -> None:
    body = json.loads((FIXTURES / "claude_code_messages.json").read_text())
    runner = ScriptedRunner(tool_target.tokenizer, [READ_CALL], model=body["model"])
    with serving(runner) as url:
        client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
        fields = {k: v for k, v in body.items() if k in ("model", "system", "messages", "tools", "metadata", "max_tokens")}
        extra = {k: body[k] for k in ("thinking", "context_management", "output_config")}
        if streamed:
            with client.messages.stream(**fields, extra_body=extra) as stream:
                message = stream.get_final_message()
        else:
            # with a timeout of its own, as Claude Code sets one: the SDK refuses 32k max_tokens unstreamed without
            message = client.messages.create(**fields, extra_body=extra, timeout=600)
        count = client.messages.count_tokens(**{k: v for k, v in fields.items() if k not in ("metadata", "max_tokens")})
    assert message.stop_reason == "tool_use" and message.content[-1].type == "tool_use"
    assert (message.content[-1].name, message.content[-1].input) == ("Read", {"file_path": "/home/user/project/notes.txt"})
    assert count.input_tokens == message.usage.input_tokens + message.usage.cache_read_input_tokens > 10_000
    agents, question = runner.prompts[0].index("<|im_start|>system\nAvailable agent types"), runner.prompts[0].index("Read notes.txt")
    assert agents < question
