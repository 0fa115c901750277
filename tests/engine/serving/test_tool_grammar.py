"""tool_choice "required" and a named tool under grammar, on the real tiny tool model (random weights: left free it
writes text, never a call), and on SmolLM2's real weights with the apply_patch tool Codex CLI really sends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import openai
import pytest

from engine.serving.tool_calls import ToolChoice, Tooling, function_tool
from engine.serving.tool_grammar import call_schema, constrained
from tests.engine.serving.scripted import GREEDY, serving

CITY = {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo", "Lima"]}},
        "required": ["city"]}
HOUR = {"type": "object", "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23}}, "required": ["hour"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": CITY}},
         {"type": "function", "function": {"name": "set_alarm", "parameters": HOUR}}]
ASK = [{"role": "user", "content": "Weather in Paris?"}]


def test_only_a_required_choice_constrains_the_answer() -> None:
    tools = [function_tool("get_weather", None, CITY)]
    assert constrained(Tooling(tools, ToolChoice("auto")), GREEDY, None) == GREEDY
    schema = json.loads(constrained(Tooling(tools, ToolChoice("required")), GREEDY, None).json_schema)
    assert schema["properties"] == {"name": {"const": "get_weather"}, "arguments": {**CITY, "additionalProperties": False}}


def test_a_schema_the_grammar_cannot_compile_still_pins_the_name() -> None:
    schema = json.loads(call_schema([function_tool("odd", None, {"type": "object", "properties": {"x": {"type": "nosuch"}}})]))
    assert schema["properties"] == {"name": {"const": "odd"}, "arguments": {"type": "object"}}


@pytest.fixture(scope="module")
def client(tool_engine):
    with serving(tool_engine) as base:
        yield openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0), tool_engine.model_ids()[0]


# Sampled, 20 requests: a fault that broke one constrained call in 7 fails the test 19 times in 20 (1 - (6/7)^20).
# Greedy, the seed changes nothing: each choice twice (the second from the prompt cache) is every path 20 took.
SAMPLES = [(0.0, 4), (0.8, 20)]


@pytest.mark.parametrize("temperature, requests", SAMPLES)
def test_every_required_call_parses(client, temperature, requests) -> None:
    """tool_choice "required" and a named tool, in turn. Greedy ran 20 requests before: 10 repeats of each of
    two answers (3 CPU s), which now must be equal instead."""
    oa, model = client
    named = {"type": "function", "function": {"name": "set_alarm"}}
    calls = []
    for seed in range(requests):
        choice = "required" if seed % 2 else named
        answer = oa.chat.completions.create(model=model, messages=ASK, tools=TOOLS, tool_choice=choice, max_tokens=60,
                                            temperature=temperature, seed=seed).choices[0]
        [call] = answer.message.tool_calls
        assert call.function.name in ("get_weather", "set_alarm") and answer.finish_reason == "tool_calls"
        assert choice == "required" or call.function.name == "set_alarm"
        json.loads(call.function.arguments)
        calls.append(call.function)
    assert temperature > 0 or calls[2:] == calls[:2]


def test_greedy_calls_are_the_same_with_and_without_speculation(client) -> None:
    oa, model = client
    answers = [oa.chat.completions.create(model=model, messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=60,
                                          extra_body={"mode": mode}).choices[0].message.tool_calls[0].function
               for mode in ("standard", "speculative")]
    assert answers[0] == answers[1]


@pytest.mark.parametrize("temperature, requests", [(0.0, 20), (0.8, 20)])
def test_instructors_structured_output_parses_every_answer(client, temperature, requests) -> None:
    """instructor's default mode (TOOLS) sends a named tool_choice and parses the call into its model. The Makefile
    installs instructor (its caps on jiter and rich would hold openai back), so this runs wherever `make test` does.
    Twenty requests at both temperatures: the issue's bar for instructor (20 of 20 at T = 0 and T = 0.8); greedy,
    the twenty must also be one answer."""
    from typing import Literal

    import instructor
    from pydantic import BaseModel, Field

    class Alarm(BaseModel):  # bounded fields: random weights fill an open string or integer up to the token limit
        hour: int = Field(ge=0, le=23)
        city: Literal["Paris", "Oslo", "Lima"]

    oa, model = client
    patched = instructor.from_openai(oa)
    alarms = [patched.chat.completions.create(model=model, messages=ASK, response_model=Alarm, max_tokens=60,
                                              max_retries=0, temperature=temperature, seed=seed) for seed in range(requests)]
    assert all(isinstance(alarm, Alarm) for alarm in alarms)
    assert temperature > 0 or len(set(map(repr, alarms))) == 1


BOUNDED_PATCH = 'start: "*** Begin Patch\\n" ("+" WORD "\\n")~1..3 "*** End Patch"\nWORD: /[a-z]{1,8}/'
PATCH_TOOL = {"type": "custom", "name": "apply_patch", "description": "Edit files.",
              "format": {"type": "grammar", "syntax": "lark", "definition": BOUNDED_PATCH}}


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_a_named_custom_tools_input_follows_its_lark_grammar(client, temperature) -> None:
    import re

    oa, model = client
    inputs = []
    for mode in ("standard", "speculative"):
        [item] = oa.responses.create(model=model, input="Add a line.", tools=[PATCH_TOOL], max_output_tokens=80,
                                     tool_choice={"type": "custom", "name": "apply_patch"}, temperature=temperature,
                                     extra_body={"mode": mode, "seed": 3}).output
        assert item.type == "custom_tool_call" and re.fullmatch(r"\*\*\* Begin Patch\n(\+[a-z]{1,8}\n){1,3}\*\*\* End Patch", item.input)
        inputs.append(item.input)
    assert temperature > 0 or inputs[0] == inputs[1]  # greedy: the same with and without speculation


def test_under_auto_a_request_with_a_custom_tool_answers_alike_with_and_without_speculation(client) -> None:
    oa, model = client
    weather = {"type": "function", "name": "get_weather", "parameters": CITY}
    texts = [oa.responses.create(model=model, input="Add a line.", tools=[PATCH_TOOL, weather], max_output_tokens=40,
                                 temperature=0, extra_body={"mode": mode}).output_text for mode in ("standard", "speculative")]
    assert texts[0] and texts[0] == texts[1]


PATCH_INPUT = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
AUTO = Tooling([TOOLS[0], function_tool("apply_patch", None, PATCH_INPUT)], ToolChoice("auto"), freeform={"apply_patch": BOUNDED_PATCH})
OPEN = '<tool_call>\n{"name": "apply_patch", "arguments": {"input": "'


@pytest.fixture(scope="module")
def tool_pair(tool_dirs):
    from engine.decoding.pair import ModelPair
    from engine.models.loading import load_model

    return ModelPair(load_model(str(tool_dirs[0])), load_model(str(tool_dirs[1])))


def _auto_takes(tool_pair, tooling: Tooling):
    """Whether the grammar `tooling` gets under "auto" takes a whole answer."""
    from engine.decoding.constraint import Constraint

    tokenizer = tool_pair.target.tokenizer
    constraint = Constraint.for_lark(constrained(tooling, GREEDY, tokenizer).grammar, tokenizer, tool_pair.vocab_width)
    eos = sorted(tokenizer.eos_token_ids)[0]

    def takes(text: str) -> bool:
        tokens = tokenizer.encode(text, add_special_tokens=False)
        kept, masks = constraint.masks_along(tokens)
        return kept == len(tokens) and bool(masks[-1, eos])
    return takes


def test_under_auto_a_call_to_a_custom_tool_follows_its_grammar(tool_pair) -> None:
    """Text and the choice of tool stay free; once the call names the custom tool, its input is the grammar's, in
    `<tool_call>` markers or bare at the start of the answer, fenced or not (a list of calls to it is refused)."""
    tokenizer = tool_pair.target.tokenizer
    takes = _auto_takes(tool_pair, AUTO)

    patch = "*** Begin Patch\n+hello\n+world\n*** End Patch"
    call = OPEN + json.dumps(patch)[1:-1] + '"}}\n</tool_call>'
    assert takes("Let me edit it.") and takes("Done. " + call + " Anything else?")
    assert takes("<tool_response>a model's own special tokens</tool_response> stay free, as a thinking model's <think>")
    assert takes('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lima"}}\n</tool_call>')
    assert not takes(OPEN + json.dumps("*** Begin Patch\nhello\n*** End Patch")[1:-1] + '"}}\n</tool_call>')
    assert not takes(OPEN + patch + '"}}\n</tool_call>')  # the input unescaped is no JSON string
    bare = OPEN.removeprefix("<tool_call>\n")  # Qwen2.5-Coder's calls often come bare, which the server reads as calls
    assert takes(bare + json.dumps(patch)[1:-1] + '"}}') and not takes(bare + 'app.py"}}')
    assert not takes(bare + json.dumps(patch)[1:-1] + '"}}\n```')
    assert takes("```json\n" + bare + json.dumps(patch)[1:-1] + '"}}\n```') and not takes("```json\n" + bare + 'app.py"}}\n```')
    assert not takes("[" + bare + 'app.py"}}]')
    splitter = AUTO.splitter(tokenizer)
    [made] = [p for p in splitter.feed("Done. " + call) + splitter.finish() if not hasattr(p, "text")]
    assert made.name == "apply_patch" and json.loads(made.arguments) == {"input": patch}


def test_under_auto_a_call_names_an_offered_tool_with_its_parameters(tool_pair) -> None:
    """Whether to call stays free, but a call the model opens, in the markers or bare opening the answer, fenced or
    not, names a tool the request offered and takes its parameters: Qwen2.5-Coder-0.5B, given Codex CLI's tools,
    wrote a fenced call to `append`, which no one offered and which came back as text. A closing fence follows
    only a call that opened with one: the 0.5B, after a bare call it wanted to go on from, was held to a stray
    "```" that Claude Code showed as the answer's text."""
    no_grammar = Tooling(AUTO.tools, ToolChoice("auto"), freeform={"apply_patch": None})
    takes = _auto_takes(tool_pair, no_grammar)
    assert takes("Sure, here it is: {\"name\": \"append\"} is text after text.")
    for call in ('{"name": "get_weather", "arguments": {"city": "Oslo"}}', '{"name": "apply_patch", "arguments": {"input": "any"}}'):
        assert takes(f"<tool_call>\n{call}\n</tool_call>") and takes(call) and takes(f"```json\n{call}\n```")
        assert not takes(f"{call}\n```")  # a fence closes only a call it opened
    for call in ('{"name": "append", "arguments": {"notes.txt": "bye"}}', '{"name": "get_weather", "arguments": {"city": "Rome"}}',
                 '{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}'):
        assert not takes(f"<tool_call>\n{call}\n</tool_call>") and not takes(call) and not takes(f"```json\n{call}\n```")
    splitter = no_grammar.splitter(tool_pair.target.tokenizer)
    [made] = [p for p in splitter.feed('```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```') + splitter.finish()
              if not hasattr(p, "text")]
    assert made.name == "get_weather"


def test_under_auto_a_request_for_one_call_holds_the_answer_to_one(tool_pair) -> None:
    """`parallel_tool_calls: false`: text and one call, in the markers or bare, but never a second call."""
    single = Tooling(AUTO.tools, ToolChoice("auto"), freeform={"apply_patch": None}, one_call=True)
    takes = _auto_takes(tool_pair, single)
    call = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    marked = f"<tool_call>\n{call}\n</tool_call>"
    assert takes(call) and takes(marked) and takes(f"Checking. {marked} Done.") and takes("No call at all.")
    assert not takes(f"{marked}\n{marked}") and not takes(f"{call}\n{marked}") and not takes(f"A. {marked} B. {marked}")
    assert _auto_takes(tool_pair, Tooling(AUTO.tools, ToolChoice("auto"), freeform={"apply_patch": None}))(f"{marked}\n{marked}")


def test_under_auto_no_other_form_the_splitter_reads_as_a_call_is_left_free(tool_pair) -> None:
    """The output splitter also reads calls with `arguments` first, OpenAI's `{"function": ...}`, `<tools>` and
    `<function` tags: written so, a call would escape the grammar (Qwen2.5-Coder-1.5B, given Codex CLI's tools,
    called `exec_command` with that tool's parameter schema as arguments). Each is refused, text and held calls stay."""
    no_grammar = Tooling(AUTO.tools, ToolChoice("auto"), freeform={"apply_patch": None})
    takes = _auto_takes(tool_pair, no_grammar)
    reordered = '{"arguments": {"city": "Oslo", "days": 2}, "name": "get_weather"}'
    for form in (f"<tool_call>\n{reordered}\n</tool_call>", reordered, f"```json\n{reordered}\n```",
                 '{"function": {"name": "get_weather", "arguments": {"x": 1}}}', '```JSON\n{"name": "get_weather", "arguments": {"x": 1}}\n```',
                 '<tools>{"name": "get_weather", "arguments": {"x": 1}}</tools>',
                 'Calling it: <function=get_weather>{"x": 1}</function>', "<function>{}</function>"):
        assert not takes(form), form
    assert takes('It said {"city": "Oslo"} and a <b>tag</b>.') and takes('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>')
    splitter = no_grammar.splitter(tool_pair.target.tokenizer)
    assert [p.name for p in splitter.feed(reordered) + splitter.finish() if not hasattr(p, "text")] == ["get_weather"]


def test_under_auto_codex_clis_own_tools_hold_its_calls(tool_pair) -> None:
    """The tools `codex exec` 0.171.0 sent (eight functions with nested schemas) compile together, so a call the
    model opens is held to them: what Qwen2.5-Coder-0.5B wrote as text becomes impossible, a shell call stays open."""
    from engine.serving.responses_api import parse_request

    body = json.loads((Path(__file__).parent / "fixtures" / "codex_responses.json").read_text())
    takes = _auto_takes(tool_pair, parse_request(body, [body["model"]], GREEDY).tooling)
    shell = '{"name": "exec_command", "arguments": {"cmd": "echo bye >> notes.txt"}}'
    assert takes(f"```json\n{shell}\n```") and takes(f"<tool_call>\n{shell}\n</tool_call>") and takes("I will append it.")
    assert not takes('```json\n{"name": "append", "arguments": {"notes.txt": "bye"}}\n```')


def test_auto_holds_nothing_for_a_model_without_json_calls_or_without_tools(tool_pair, tiny_target) -> None:
    assert constrained(AUTO, GREEDY, tiny_target.tokenizer) == GREEDY
    assert constrained(Tooling([], ToolChoice("auto")), GREEDY, tool_pair.target.tokenizer) == GREEDY


@pytest.mark.parametrize("drafter", ["model", "lookup"])
def test_greedy_under_a_call_grammar_is_the_same_with_and_without_speculation(tool_pair, drafter) -> None:
    """The envelope (random weights write text under it) and a custom tool's input alone, escaped: draft and target
    are masked alike, so speculation writes what standard decoding writes."""
    import re

    from engine.decoding.generation import generate
    from engine.serving.json_string_grammar import json_string_grammar

    envelope = constrained(AUTO, GREEDY, tool_pair.target.tokenizer)
    for params in (envelope, GREEDY.replace(grammar=json_string_grammar(BOUNDED_PATCH))):
        params = params.replace(max_tokens=40, adaptive=False)
        standard = generate(ASK, tool_pair, params.replace(mode="standard"), chat=True)
        speculative = generate(ASK, tool_pair, params.replace(mode="speculative", drafter=drafter), chat=True)
        assert speculative.tokens == standard.tokens and speculative.stats.drafted > 0
    assert re.fullmatch(r"\*\*\* Begin Patch\n(\+[a-z]{1,8}\n){1,3}\*\*\* End Patch", json.loads(f'"{standard.text}"'))


REQUIRED = Tooling(AUTO.tools, ToolChoice("required"), freeform={"apply_patch": BOUNDED_PATCH})


def test_under_required_a_call_to_a_custom_tool_follows_its_grammar(tool_pair) -> None:
    """The answer is one call; a call to the custom tool has its input held to the tool's grammar, escaped, and the
    other tools keep their parameter schemas."""
    from engine.decoding.constraint import Constraint

    tokenizer = tool_pair.target.tokenizer
    params = constrained(REQUIRED, GREEDY, tokenizer)
    constraint = Constraint.for_lark(params.grammar, tokenizer, tool_pair.vocab_width)
    eos = sorted(tokenizer.eos_token_ids)[0]

    def takes(text: str) -> bool:
        tokens = tokenizer.encode(text, add_special_tokens=False)
        kept, masks = constraint.masks_along(tokens)
        return kept == len(tokens) and bool(masks[-1, eos])

    def patch_call(patch: str) -> str:
        return json.dumps({"name": "apply_patch", "arguments": {"input": patch}})

    assert params.json_schema is None
    assert takes(patch_call("*** Begin Patch\n+hello\n*** End Patch"))
    assert not takes(patch_call("*** Begin Patch\nhello\n*** End Patch")) and not takes(patch_call("hello.txt"))
    assert takes('{"name": "get_weather", "arguments": {"city": "Paris"}}')
    assert not takes('{"name": "get_weather", "arguments": {"city": "Rome"}}') and not takes("Sure.")


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_required_calls_to_a_custom_tool_follow_its_grammar(client, temperature) -> None:
    """Through the server: every answer is a call to the custom tool with an input its grammar takes (random weights
    left free write any string), the same with and without speculation when greedy."""
    import re

    oa, model = client
    inputs = []
    for seed, mode in enumerate(["standard", "speculative"] * 4):
        [item] = oa.responses.create(model=model, input="Add a line.", tools=[PATCH_TOOL], tool_choice="required",
                                     max_output_tokens=80, temperature=temperature, extra_body={"seed": seed, "mode": mode}).output
        assert item.type == "custom_tool_call" and re.fullmatch(r"\*\*\* Begin Patch\n(\+[a-z]{1,8}\n){1,3}\*\*\* End Patch", item.input)
        inputs.append(item.input)
    assert temperature > 0 or len(set(inputs)) == 1


CODEX_PATCH_TOOL = json.loads((Path(__file__).parent / "fixtures" / "codex_apply_patch_tool.json").read_text())["tool"]
SHELL = {"type": "function", "name": "exec_command", "description": "Run a shell command.",
         "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}
PATCH_EXAMPLE = "*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch"


@pytest.fixture(scope="module")
def smollm_draft(smollm_dir, tmp_path_factory) -> Path:
    """SmolLM2's 4-bit-rounded copy: a draft model that agrees with it often but not always."""
    from tests.real_models import rounded_copy

    return rounded_copy(smollm_dir, tmp_path_factory.mktemp("smollm-q4") / "rounded", bits=4)


@contextmanager
def greedy_server(target: Path, draft: Path) -> Iterator[tuple[openai.OpenAI, str]]:
    """An OpenAI client of a greedy server over the pair, and the model's name."""
    from engine.decoding.pair import ModelPair
    from engine.serving.generation_queue import EngineThread

    engine = EngineThread(lambda: ModelPair.load(str(target), str(draft)), str(target))
    engine.start()
    try:
        with serving(engine) as base:
            yield openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0), engine.model_ids()[0]
    finally:
        engine.stop()


@pytest.fixture(scope="module")
def smollm_server(smollm_dir, smollm_draft):
    """SmolLM2-135M-Instruct with its own template (no place for tools)."""
    with greedy_server(smollm_dir, smollm_draft) as server:
        yield server


@pytest.fixture(scope="module")
def smollm_hermes_server(smollm_dir, smollm_draft, tmp_path_factory):
    """SmolLM2 with Qwen2.5's tool template put in its folder, as a user can: mlx-lm then reads its calls as JSON in
    <tool_call> tags (several tokens each in SmolLM2's vocabulary)."""
    import shutil

    from engine.fixtures.tiny_tool_model import TOOL_TEMPLATE

    folder = tmp_path_factory.mktemp("smollm-hermes")
    for file in smollm_dir.iterdir():
        (folder / file.name).symlink_to(file) if file.suffix == ".safetensors" else shutil.copy(file, folder / file.name)
    (folder / "chat_template.jinja").write_text(TOOL_TEMPLATE)
    with greedy_server(folder, smollm_draft) as server:
        yield server


def codex_grammar_takes(text: str, model_dir: Path) -> bool:
    """Whether Codex's apply_patch grammar takes `text` whole, checked by llguidance alone (Python's lark cannot
    load the grammar: its `/(.*)/` matches the empty string)."""
    from llguidance import LLMatcher
    from llguidance.hf import from_tokenizer
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    matcher = LLMatcher(from_tokenizer(tokenizer), LLMatcher.grammar_from_lark(CODEX_PATCH_TOOL["format"]["definition"]))
    tokens = tokenizer.encode(text, add_special_tokens=False)
    return matcher.try_consume_tokens(tokens) == len(tokens) and bool(matcher.is_accepting())


def smollm_patch_calls(server: tuple[openai.OpenAI, str], tool_choice: object) -> list[str]:
    """The apply_patch inputs a greedy SmolLM2 writes when asked to create a file, without speculation, with its
    4-bit copy drafting and with lookup (each checked to have drafted)."""
    oa, model = server
    inputs = []
    for mode, drafter in (("standard", "model"), ("speculative", "model"), ("speculative", "lookup")):
        response = oa.responses.create(model=model, input="Create hello.txt with the line hi.", tools=[SHELL, CODEX_PATCH_TOOL],
                                       instructions="Edit files with apply_patch. A patch looks like this:\n" + PATCH_EXAMPLE,
                                       tool_choice=tool_choice, max_output_tokens=80, temperature=0,
                                       extra_body={"mode": mode, "drafter": drafter, "adaptive": False})
        [item] = response.output
        assert item.type == "custom_tool_call" and item.name == "apply_patch"
        assert mode == "standard" or response.model_extra["speculation"]["drafted"] > 0
        inputs.append(item.input)
    return inputs


@pytest.mark.real_weights
def test_smollm_calls_codexs_apply_patch_with_a_patch_its_grammar_takes(smollm_server, smollm_dir) -> None:
    """A real model, Codex's real tool, tool_choice naming it: the call comes back parsed, its input a patch Codex's
    grammar takes, the same greedy with the draft model and with lookup as without speculation."""
    inputs = smollm_patch_calls(smollm_server, {"type": "custom", "name": "apply_patch"})
    assert codex_grammar_takes(inputs[0], smollm_dir) and inputs[0].startswith("*** Begin Patch\n*** Add File: ")
    assert inputs[1] == inputs[0] and inputs[2] == inputs[0]


@pytest.mark.real_weights
def test_smollm_required_to_call_writes_a_patch_codexs_grammar_takes(smollm_hermes_server, smollm_dir) -> None:
    """tool_choice "required" with a tool template: the call (JSON, its input escaped) names apply_patch here, and
    its input is a patch, where unconstrained SmolLM2 wrote a file's name; greedy alike in every mode."""
    inputs = smollm_patch_calls(smollm_hermes_server, "required")
    assert codex_grammar_takes(inputs[0], smollm_dir) and inputs[1] == inputs[0] and inputs[2] == inputs[0]


def test_a_second_request_reads_no_vocabulary_and_rewrites_no_grammar_again(tool_pair, monkeypatch) -> None:
    """What depends only on the tokenizer (the call's markers, from its added vocabulary) or on a grammar's text (its
    rewriting for a JSON string) is worked out once, not on every request an agent sends with the same tools."""
    from engine.serving import tool_grammar

    tokenizer = tool_pair.target.tokenizer
    reads, rewrites = [], []
    vocabulary, rewrite = tokenizer._tokenizer.get_added_vocab, tool_grammar.json_string_grammar
    monkeypatch.setattr(tokenizer._tokenizer, "get_added_vocab", lambda: reads.append(1) or vocabulary())
    monkeypatch.setattr(tool_grammar, "json_string_grammar", lambda lark: rewrites.append(lark) or rewrite(lark))
    required = Tooling(AUTO.tools, ToolChoice("required"), freeform=AUTO.freeform)
    first = [constrained(tooling, GREEDY, tokenizer) for tooling in (AUTO, required)]
    reads.clear()
    rewrites.clear()
    assert [constrained(tooling, GREEDY, tokenizer) for tooling in (AUTO, required)] == first
    assert first[0].grammar and first[1].grammar and reads == [] and rewrites == []
