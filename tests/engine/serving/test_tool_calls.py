"""Tool calls in the model's output, split with mlx-lm's markers and parser on the tiny tool model's tokenizer."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from engine.errors import InvalidParameterError
from engine.serving.pieces import TextPiece, ToolCall
from engine.serving.tool_calls import ToolCallMissing, ToolChoice, Tooling, function_tool, history_call
from tests.engine.serving.scripted import FINAL_ANSWER, GREEDY, TIME_CALL, WEATHER_CALL, WEATHER_TOOL, ScriptedRunner, serving

WEATHER = function_tool("get_weather", "The weather in a city", {"type": "object", "properties": {"city": {"type": "string"}}})
TIME = function_tool("get_time", "The time in a city", {"type": "object", "properties": {"city": {"type": "string"}}})
CALL, SECOND = WEATHER_CALL, TIME_CALL
TIME_TOOL = TIME


def token_texts(tokenizer, text: str) -> list[str]:
    """The text as the engine streams it: one piece per token, from the streaming detokenizer."""
    detokenizer, pieces = tokenizer.detokenizer, []
    for token in tokenizer.encode(text, add_special_tokens=False):
        detokenizer.add_token(token)
        pieces.append(detokenizer.last_segment)
    detokenizer.finalize()
    return pieces + [detokenizer.last_segment]


def split(tokenizer, text: str, tooling: Tooling) -> list:
    splitter = tooling.splitter(tokenizer)
    pieces = [p for piece in token_texts(tokenizer, text) for p in splitter.feed(piece)]
    return pieces + splitter.finish()


def calls(pieces: list) -> list[tuple[str, dict]]:
    return [(p.name, json.loads(p.arguments)) for p in pieces if isinstance(p, ToolCall)]


def text(pieces: list) -> str:
    return "".join(p.text for p in pieces if isinstance(p, TextPiece))


def test_the_tool_model_has_mlx_lms_json_tools_markers(tool_target) -> None:
    tokenizer = tool_target.tokenizer
    assert tokenizer.has_tool_calling and (tokenizer.tool_call_start, tokenizer.tool_call_end) == ("<tool_call>", "</tool_call>")
    assert tokenizer.tool_parser.__module__ == "mlx_lm.tool_parsers.json_tools"


def test_a_call_between_texts_is_split_out_and_parsed(tool_target) -> None:
    pieces = split(tool_target.tokenizer, f"Let me look.\n{CALL}\nDone.", Tooling([WEATHER]))
    assert calls(pieces) == [("get_weather", {"city": "Paris"})]
    assert text(pieces) == "Let me look.\n\nDone."
    assert isinstance(pieces[0], TextPiece) and isinstance(pieces[-1], TextPiece)  # in the order written


def test_parallel_calls_come_out_in_order_with_distinct_ids(tool_target) -> None:
    pieces = split(tool_target.tokenizer, f"{CALL}\n{SECOND}", Tooling([WEATHER, TIME]))
    assert calls(pieces) == [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Oslo"})]
    assert len({p.id for p in pieces if isinstance(p, ToolCall)}) == 2


@pytest.mark.parametrize("answer", [f"{CALL}\n", f"\n{CALL}\n{SECOND}\n\n", '{"name": "get_weather", "arguments": {"city": "Paris"}}\n'])
def test_an_answer_of_calls_has_no_text(tool_target, answer) -> None:
    """The whitespace around calls lays them out: Qwen2.5-Coder-0.5B ended a bare call with a newline, which came
    back as a text of its own beside the call (in Claude Code, an empty answer it showed and sent back)."""
    pieces = split(tool_target.tokenizer, answer, Tooling([WEATHER, TIME]))
    assert calls(pieces) and not [p for p in pieces if isinstance(p, TextPiece)]


def test_blank_text_stays_in_an_answer_that_made_no_call(tool_target) -> None:
    pieces = split(tool_target.tokenizer, "Hi.\n\n", Tooling([WEATHER]))
    assert text(pieces) == "Hi.\n\n" and not calls(pieces)


def test_asked_for_one_call_the_first_of_several_is_the_answer(tool_target) -> None:
    """A model whose calls no grammar holds may write several even when the request allows one."""
    pieces = split(tool_target.tokenizer, f"{CALL}\n{SECOND}", Tooling([WEATHER, TIME], one_call=True))
    assert calls(pieces) == [("get_weather", {"city": "Paris"})] and not text(pieces)


def test_without_tools_the_text_is_left_whole(tool_target) -> None:
    for tooling in (Tooling([]), Tooling([WEATHER], ToolChoice("none"))):
        pieces = split(tool_target.tokenizer, f"Look: {CALL}", tooling)
        assert text(pieces) == f"Look: {CALL}" and not calls(pieces)


def test_a_call_cut_short_is_given_back_as_text(tool_target) -> None:
    cut = CALL[: CALL.index("Paris")]
    pieces = split(tool_target.tokenizer, cut, Tooling([WEATHER]))
    assert not calls(pieces) and text(pieces) == cut


def test_required_holds_text_back_until_a_call_comes(tool_target) -> None:
    splitter = Tooling([WEATHER], ToolChoice("required")).splitter(tool_target.tokenizer)
    assert splitter.feed("Let me look. ") == []
    released = [p for piece in token_texts(tool_target.tokenizer, CALL) for p in splitter.feed(piece)]
    assert released[0] == TextPiece("Let me look.") and calls(released) == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("choice, answer", [(ToolChoice("required"), "It is sunny."),
                                             (ToolChoice("named", "get_time"), CALL)])
def test_a_required_call_the_model_did_not_make_is_an_error_naming_what_it_wrote(tool_target, choice, answer) -> None:
    with pytest.raises(ToolCallMissing, match="answered with text: 'It is sunny.'|called get_weather"):
        split(tool_target.tokenizer, answer, Tooling([WEATHER, TIME], choice))


def test_a_required_call_the_token_limit_cut_is_the_text_it_wrote(tool_target) -> None:
    splitter = Tooling([WEATHER], ToolChoice("required")).splitter(tool_target.tokenizer)
    assert splitter.feed('{"name": "get_weather", "argu') == []
    assert text(splitter.finish(cut=True)) == '{"name": "get_weather", "argu'


def test_a_model_without_tool_calling_cannot_be_required_to_call(tiny_target) -> None:
    with pytest.raises(InvalidParameterError, match="no tool-call syntax"):
        Tooling([WEATHER], ToolChoice("required")).splitter(tiny_target.tokenizer)
    assert text(split(tiny_target.tokenizer, CALL, Tooling([WEATHER]))) == CALL  # auto: offered, nothing to parse


def test_the_choice_decides_what_the_template_shows_and_the_prompt_asks() -> None:
    question = [{"role": "user", "content": "Weather?"}]
    assert Tooling([WEATHER, TIME], ToolChoice("none")).template_tools() is None
    assert Tooling([WEATHER, TIME], ToolChoice("named", "get_time")).template_tools() == [TIME]
    assert Tooling([WEATHER, TIME]).prompt(question) == question
    named = Tooling([WEATHER], ToolChoice("named", "get_weather")).prompt([{"role": "system", "content": "Be brief."}, *question])
    assert named[0] == {"role": "system", "content": "Be brief.\n\nAnswer by calling the function get_weather."}
    assert Tooling([WEATHER], ToolChoice("required")).prompt(question)[0]["role"] == "system"


def test_history_calls_take_arguments_as_objects_or_json_text() -> None:
    expected = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    assert history_call("c1", "f", '{"a": 1}') == expected == history_call("c1", "f", {"a": 1})
    with pytest.raises(ValueError, match="not valid JSON"):
        history_call("c1", "f", "{a")
    with pytest.raises(ValueError, match="name"):
        function_tool("")


# Through the server, with the official openai client. The tool model's answers are scripted (tests/engine/serving/
# scripted.py): its real tokenizer streams them and run_job splits them as it splits a real model's output.

QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture
def scripted(tool_target):
    def make(*replies: str) -> tuple[ScriptedRunner, openai.OpenAI, str]:
        runner = ScriptedRunner(tool_target.tokenizer, list(replies))
        stack.append(serving(runner))
        base = stack[-1].__enter__()
        return runner, openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0), base

    stack: list = []
    yield make
    for served in stack:
        served.__exit__(None, None, None)


def streamed_calls(chunks: list) -> tuple[str, list[dict], str | None]:
    """(content, calls, finish reason) put together from streamed deltas, as OpenAI's own SDK helpers do."""
    content, calls, finish = "", {}, None
    for chunk in chunks:
        if not chunk.choices:
            continue
        delta, finish = chunk.choices[0].delta, chunk.choices[0].finish_reason or finish
        content += delta.content or ""
        for call in delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
            entry["id"] = call.id or entry["id"]
            if call.function:
                entry["name"] += call.function.name or ""
                entry["arguments"] += call.function.arguments or ""
    return content, [calls[i] for i in sorted(calls)], finish


def test_a_tool_round_trip_with_the_openai_client(scripted) -> None:
    runner, client, _ = scripted(f"Let me check.\n{WEATHER_CALL}", FINAL_ANSWER)
    first = client.chat.completions.create(model="tiny-tools", messages=QUESTION, tools=[WEATHER_TOOL])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Let me check."
    [call] = choice.message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})
    assert first.model_extra["speculation"]["mode"] == "standard"
    history = QUESTION + [choice.message.model_dump(exclude_none=True),
                          {"role": "tool", "tool_call_id": call.id, "content": "22 degrees, sunny"}]
    final = client.chat.completions.create(model="tiny-tools", messages=history, tools=[WEATHER_TOOL])
    assert final.choices[0].message.content == FINAL_ANSWER and final.choices[0].finish_reason == "stop"
    assert '"name": "get_weather"' in runner.prompts[0]  # the tools reached the template
    assert '{"name": "get_weather", "arguments": {"city": "Paris"}}' in runner.prompts[1]  # so did the call
    assert "<tool_response>\n22 degrees, sunny\n</tool_response>" in runner.prompts[1]  # and its result


def test_a_streamed_tool_round_trip_with_the_openai_client(scripted) -> None:
    runner, client, _ = scripted(f"Let me check.\n{WEATHER_CALL}", FINAL_ANSWER)
    chunks = list(client.chat.completions.create(model="tiny-tools", messages=QUESTION, tools=[WEATHER_TOOL], stream=True))
    content, [call], finish = streamed_calls(chunks)
    assert (content, finish) == ("Let me check.", "tool_calls")
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Paris"} and call["id"]
    heads = [c for c in chunks if c.choices and c.choices[0].delta.tool_calls and c.choices[0].delta.tool_calls[0].id]
    assert heads[0].choices[0].delta.tool_calls[0].function.arguments == ""  # the name first, then the arguments
    assistant = {"role": "assistant", "content": content, "tool_calls": [
        {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]}
    history = QUESTION + [assistant, {"role": "tool", "tool_call_id": call["id"], "content": "22 degrees, sunny"}]
    final = list(client.chat.completions.create(model="tiny-tools", messages=history, tools=[WEATHER_TOOL], stream=True))
    assert streamed_calls(final) == (FINAL_ANSWER, [], "stop")
    assert "<tool_response>\n22 degrees, sunny\n</tool_response>" in runner.prompts[1]


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_an_openai_agents_runner_runs_the_call_and_ends_on_the_answer(scripted, api) -> None:
    """OpenAI's Agents SDK drives the server as an agent does: its Runner offers the tool, runs the call the model
    makes (the first of two, as it asked for one at a time), sends the result back and ends on the model's answer."""
    import agents

    runner, _, base = scripted(WEATHER_CALL + "\n" + WEATHER_CALL.replace("Paris", "Lyon"), FINAL_ANSWER)
    ran: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return "22 degrees, sunny"

    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
    model_class = agents.OpenAIChatCompletionsModel if api == "chat" else agents.OpenAIResponsesModel
    agent = agents.Agent(name="weather", instructions="Answer with the tool.", tools=[get_weather],
                         model=model_class(model="tiny-tools", openai_client=client),
                         model_settings=agents.ModelSettings(parallel_tool_calls=False))
    result = asyncio.run(agents.Runner.run(agent, "Weather in Paris?", max_turns=3,
                                           run_config=agents.RunConfig(tracing_disabled=True)))
    assert ran == ["Paris"] and result.final_output == FINAL_ANSWER
    assert "<tool_response>\n22 degrees, sunny\n</tool_response>" in runner.prompts[1]


def test_parallel_calls_come_back_as_several_tool_calls(scripted) -> None:
    _, client, _ = scripted(f"{WEATHER_CALL}\n{TIME_CALL}", f"{WEATHER_CALL}\n{TIME_CALL}")
    whole = client.chat.completions.create(model="tiny-tools", messages=QUESTION, tools=[WEATHER_TOOL, TIME_TOOL])
    assert [c.function.name for c in whole.choices[0].message.tool_calls] == ["get_weather", "get_time"]
    chunks = list(client.chat.completions.create(model="tiny-tools", messages=QUESTION, tools=[WEATHER_TOOL, TIME_TOOL],
                                                 stream=True))
    assert [c["name"] for c in streamed_calls(chunks)[1]] == ["get_weather", "get_time"]
    indexes = {d.index for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or []}
    assert indexes == {0, 1}


def test_tool_choice_none_leaves_the_tools_out_and_the_text_whole(scripted) -> None:
    runner, client, _ = scripted(WEATHER_CALL)
    response = client.chat.completions.create(model="tiny-tools", messages=QUESTION, tools=[WEATHER_TOOL], tool_choice="none")
    assert response.choices[0].message.content == WEATHER_CALL and not response.choices[0].message.tool_calls
    assert "get_weather" not in runner.prompts[0]


def test_a_required_call_not_made_is_a_500_and_the_server_keeps_serving(scripted) -> None:
    runner, client, _ = scripted("It is sunny.", "It is sunny.", f"{WEATHER_CALL}")
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="tiny-tools", messages=QUESTION, tools=[WEATHER_TOOL], tool_choice="required")
    assert caught.value.code == "tool_call_missing" and "It is sunny." in caught.value.message
    assert "Answer by calling one or more of the tools above." in runner.prompts[0]
    chunks = client.chat.completions.create(model="tiny-tools", messages=QUESTION, tools=[WEATHER_TOOL],
                                            tool_choice="required", stream=True)
    with pytest.raises(openai.APIError, match="tool_choice asked for a tool call"):
        list(chunks)
    named = client.chat.completions.create(model="tiny-tools", messages=QUESTION, tools=[WEATHER_TOOL],
                                           tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert named.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_the_real_tool_model_reads_the_tools_and_answers_as_generate_does(tool_engine, tool_dirs) -> None:
    """End to end on the tiny tool model (random weights: it writes text, not calls): greedy, speculative, under the
    grammar "auto" holds a call the model opens to (`tool_grammar.auto_grammar`)."""
    from engine.decoding.generation import generate
    from engine.decoding.pair import ModelPair
    from engine.serving.tool_grammar import constrained

    with serving(tool_engine) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
        model = tool_engine.model_ids()[0]
        offered = client.chat.completions.create(model=model, messages=QUESTION, tools=[WEATHER_TOOL], max_tokens=20)
        plain = client.chat.completions.create(model=model, messages=QUESTION, max_tokens=20)
    pair = ModelPair.load(str(tool_dirs[0]), str(tool_dirs[1]))
    params = constrained(Tooling([WEATHER_TOOL]), GREEDY.replace(max_tokens=20), pair.target.tokenizer)
    expected = generate(QUESTION, pair, params, tools=[WEATHER_TOOL])
    assert params.grammar
    assert offered.choices[0].message.content == expected.text
    assert offered.usage.prompt_tokens == expected.stats.prompt_tokens > plain.usage.prompt_tokens
    assert offered.model_extra["speculation"]["drafter"] == "model"


def test_tools_a_models_template_has_no_place_for_are_served_with_a_warning(tiny_url) -> None:
    import httpx

    body = {"messages": QUESTION, "tools": [WEATHER_TOOL], "max_tokens": 3}
    response = httpx.post(tiny_url + "/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 200 and "no place for tools" in response.headers["x-specchat-warning"]
    assert "x-specchat-warning" not in httpx.post(tiny_url + "/v1/chat/completions", json={**body, "tools": None}).headers
