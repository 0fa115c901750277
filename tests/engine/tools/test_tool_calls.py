"""Tool calls in the model's output, split with mlx-lm's markers and parser on the tiny tool model's tokenizer."""

from __future__ import annotations

import json

import pytest

from engine.errors import InvalidParameterError
from engine.tools.tool_calls import (
    OutputSplitter, TextPiece, ToolCall, ToolCallMissing, ToolChoice, Tooling, function_tool, history_call,
)

WEATHER = function_tool("get_weather", "The weather in a city", {"type": "object", "properties": {"city": {"type": "string"}}})
TIME = function_tool("get_time", "The time in a city", {"type": "object", "properties": {"city": {"type": "string"}}})
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
SECOND = '<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n</tool_call>'


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
    assert released[0] == TextPiece("Let me look. ") and calls(released) == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("choice, answer", [(ToolChoice("required"), "It is sunny."),
                                             (ToolChoice("named", "get_time"), CALL)])
def test_a_required_call_the_model_did_not_make_is_an_error_naming_what_it_wrote(tool_target, choice, answer) -> None:
    with pytest.raises(ToolCallMissing, match="answered with text: 'It is sunny.'|called get_weather"):
        split(tool_target.tokenizer, answer, Tooling([WEATHER, TIME], choice))


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
