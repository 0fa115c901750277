"""Tool calls under grammar: tool_choice "required" or a named tool holds the answer to a call, and under "auto" a
call the model opens holds to an offered tool (a custom tool's input to that tool's grammar).

Asking for a call in the prompt is not enough: at temperature 0 a small model answers with text every time, and
the request failed. So the answer is constrained, for draft and target alike, to a call as JSON the output
splitter reads (`loose_calls`: a bare `{"name": ..., "arguments": {...}}` opening the answer): the name one of the
tools the choice allows, the arguments that tool's parameter schema. It reuses the engine's output constraint
(`decoding/constraint.py`, the one `response_format` uses), so speculation stays exact under it: every
distribution the acceptance rule compares is masked alike. A tool whose parameter schema the grammar library
cannot compile still gets its name enforced, with any JSON object as its arguments. The arguments take only the
parameters the tool declares (as OpenAI's strict mode has it): left open, a sampling model invents keys until the
token limit cuts it. An answer the limit cuts anyway comes back as the text it is, with finish reason "length".

A named custom tool (Codex's apply_patch) whose Lark grammar compiles has its whole answer held to that grammar
instead (`FreeformSplitter`). Under "required", a call to a custom tool with a
grammar has its input string follow that grammar, JSON-escaped (`required_grammar`, with `json_string_grammar`).
Under "auto", text and whether to call stay free, but once the model opens a call, in the template's markers or
bare at the start of the answer, it names an offered tool and takes that tool's parameters, a custom tool's input
following its grammar the same way (`auto_grammar`), by the same constraint. Qwen2.5-Coder-0.5B, given Codex CLI's
tools, opened fenced calls to tools nobody offered (`append`, `g`), and asked for a patch called apply_patch bare
with a file's name as the patch.
"""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..params import GenerationParams
from .custom_tools import FREEFORM_INPUT
from .json_string_grammar import json_string_grammar
from .loose_calls import CALL_KEYS, TAG_CLOSERS
from .pieces import Piece, TextPiece, ToolCall, new_call_id
from .tool_calls import Tool, Tooling, function_name

ANY_ARGUMENTS = {"type": "object"}
GRAMMARS_KEPT = 32  # custom tools' grammars kept rewritten: an agent offers the same few on every request


def constrained(tooling: Tooling, params: GenerationParams, tokenizer: Any) -> GenerationParams:
    """`params` with the answer held to a call when the choice requires one (a custom tool's input to its grammar);
    for a named custom tool with a grammar, held to that grammar (the whole answer is its input); under "auto", the
    calls it opens held to the offered tools (unless the request asked for a format of its own). Else as they are."""
    if not tooling.choice.requires_call:
        envelope = None if params.json_schema or params.grammar else auto_grammar(tooling, tokenizer)
        return params.replace(grammar=envelope) if envelope else params
    if freeform_input(tooling):
        return params.replace(json_schema=None, grammar=tooling.freeform[tooling.choice.name])  # type: ignore[index]
    tools = tooling.template_tools() or []
    grammar = required_grammar(tools, _escaped_inputs(tooling, {function_name(t) for t in tools}))
    return params.replace(json_schema=None, grammar=grammar) if grammar else params.replace(json_schema=call_schema(tools))


def freeform_input(tooling: Tooling) -> str | None:
    """The custom tool whose input the whole answer is (tool_choice names it and it has a grammar llguidance
    compiles), else None: the one case a grammar-described input can be constrained, since inside a JSON call it
    would be an escaped string the grammar does not describe."""
    from ..decoding.constraint import grammar_problem

    name = tooling.choice.name if tooling.choice.mode == "named" else None
    lark = tooling.freeform.get(name) if name else None
    return name if lark and not grammar_problem(lark) else None


# The pieces every call pattern under auto is built from, each written once: a held call's opening, the fence a
# bare call may open in, and what the output splitter also reads as a call but the grammar does not hold, so text
# may not hold it: JSON opening the answer with another of a call's keys first (`{"arguments": ..., "name": ...}`,
# OpenAI's `{"function": ...}`), any JSON between the markers but a held call, and `<tools>` / `<function` tags.
# The keys and tags are the splitter's own (`loose_calls`), so that the two cannot drift apart.
_OPENING = r'\s*\{\s*"name"'
_FENCE = r"\s*```[A-Za-z]*"
_LOOSE_OPENING = r'\s*\{\s*"(' + "|".join(CALL_KEYS) + ')"'
_TAGGED = r"(.|\n)*(" + "|".join(map(re.escape, TAG_CLOSERS)) + r")(.|\n)*"


def auto_grammar(tooling: Tooling, tokenizer: Any) -> str | None:
    """The grammar (llguidance's JSON of several) that leaves text free, and whether to call a tool, but holds a call,
    once the model opens one, to one of the offered tools: `{"name": <one of them>, "arguments": <its parameters>}`
    (a custom tool's `{"input": "<the input, escaped>"}`, to its grammar). Between the call markers, or bare opening
    the answer, in a fence or not (`bare`), where the output splitter reads it as a call too. Without it a small
    model opens a call and names a tool nobody offered (Qwen2.5-Coder-0.5B, given Codex CLI's tools, called
    `append`), which stays text. The other forms the splitter reads are refused, so that no call escapes the
    grammar: a list of calls opening the answer, other key orders, `<tools>` and `<function` tags (Qwen2.5-Coder-1.5B,
    given Codex's tools, called `exec_command` with its parameter schema for arguments in a form left free then). One form
    stays free: a fenced call after other text, since text may hold code fences and llguidance's lexer, which does
    not go back, cannot tell the two apart at the fence.

    A request that asks for one call at most (`Tooling.one_call`) is held to one.

    Only for tool_choice "auto" and for a model that writes calls as that JSON between single-token markers (mlx-lm's
    json_tools family: Qwen2.5, Hermes; a marker of several tokens would be text the grammar could not tell from a
    call). Else None."""
    from ..decoding.constraint import grammar_problem

    markers = _call_markers(tokenizer) if tooling.choice.mode == "auto" else None
    tools = (tooling.template_tools() or []) if markers is not None else []
    if markers is None or not tools:
        return None
    inputs = _escaped_inputs(tooling, set(tooling.freeform))
    custom = list(inputs)
    start = "start: bare | lead (call free | open_call)?" if tooling.one_call else "start: (bare | lead) (call free)* open_call?"
    lines = ["%llguidance {}", start,
             f"bare: {' | '.join(f'bare_{i}' for i in range(len(tools)))}",
             f"one: {' | '.join(f'call_{i}' for i in range(len(tools)))}",
             f"lead: FIRST{markers.between}", f"free: TEXT{markers.between}", rf"TEXT: /(.|\n)*/ & ~/{_TAGGED}/",
             f"call: {markers.start} (one | OTHER) {markers.end}", f"open_call: {markers.start} OTHER",
             r"OTHER: /(.|\n)*/ & ~/\s*[\{\[](.|\n)*/",
             rf"FIRST: /(.|\n)*/ & ~/({_FENCE})?\s*\[?{_LOOSE_OPENING}(.|\n)*/ & ~/{_TAGGED}/"]
    for i, tool in enumerate(tools):
        name = function_name(tool)
        head = _OPENING + r'\s*:\s*' + re.escape(json.dumps(name, ensure_ascii=False)) + r'\s*,\s*"arguments"\s*:\s*'
        if name in inputs:
            head, body, tail = head + rf'\{{\s*"{FREEFORM_INPUT}"\s*:\s*"', f"@input_{custom.index(name)}", r'"\s*\}\s*\}'
        else:
            body, tail = f"args_{i}", r"\s*\}"
            lines.append(_arguments_rule(i, tool))
        lines += [f"call_{i}: HEAD_{i} {body} TAIL_{i}", f"HEAD_{i}: /{head}/", rf"TAIL_{i}: /{tail}\s*/",
                  f"bare_{i}: call_{i} | FENCED_{i} {body} FENCED_TAIL_{i}", f"FENCED_{i}: /{_FENCE}{head}/",
                  rf"FENCED_TAIL_{i}: /{tail}\s*(```\s*)?/"]
    grammar = _with_inputs(lines, inputs)
    return None if grammar_problem(grammar) else grammar  # a tool llguidance cannot hold leaves the calls free, as before


def required_grammar(tools: list[Tool], inputs: dict[str, str]) -> str | None:
    """The grammar of one call, as `call_schema` writes it, where a call to a custom tool in `inputs` (its name ->
    its grammar, escaped) holds its input to that grammar; None when there is none such (the schema alone serves).

    Without it a model told to call apply_patch may write any string as the patch (SmolLM2, given a Hermes
    template, wrote a file's name). Every call opens with a literal of its own up to its arguments: llguidance's
    lexer does not go back, so one whole JSON call beside a literal opening the same way would never be lexed."""
    if not inputs:
        return None
    lines, custom = ["%llguidance {}", f"start: {' | '.join(f'call_{i}' for i in range(len(tools)))}"], list(inputs)
    for i, tool in enumerate(tools):
        name = function_name(tool)
        opening = json.dumps({"name": name}, ensure_ascii=False)[:-1] + ', "arguments": '
        if name in inputs:
            opening += f'{{"{FREEFORM_INPUT}": "'
            lines.append(f'call_{i}: HEAD_{i} @input_{custom.index(name)} "\\"}}}}"')
        else:
            lines += [f'call_{i}: HEAD_{i} args_{i} "}}"', _arguments_rule(i, tool)]
        lines.append(f"HEAD_{i}: {json.dumps(opening, ensure_ascii=False)}")
    return _with_inputs(lines, inputs)


def _arguments_rule(index: int, tool: Tool) -> str:
    """The rule `args_<index>`: a call's arguments as JSON its tool's parameters allow (llguidance's `%json`, with
    `JSON_OPTIONS`' separators), one rule for the calls under "auto" and under "required"."""
    from ..decoding.constraint import JSON_OPTIONS

    return f"args_{index}: %json {json.dumps({**_arguments(tool), 'x-guidance': JSON_OPTIONS}, ensure_ascii=False)}"


def _escaped_inputs(tooling: Tooling, names: set[str]) -> dict[str, str]:
    """The custom tools among `names` whose grammar holds their input inside a JSON call: name -> the grammar,
    rewritten for the escaped string (those that do not compile, raw or rewritten, are left out)."""
    return {name: escaped for name, lark in tooling.freeform.items() if name in names and lark and (escaped := _escaped(lark))}


@lru_cache(maxsize=GRAMMARS_KEPT)
def _escaped(lark: str) -> str | None:
    """A custom tool's grammar rewritten for the JSON string holding its input, if both compile (kept per grammar
    text: an agent sends the same tools with every request)."""
    from ..decoding.constraint import grammar_problem

    escaped = json_string_grammar(lark) if not grammar_problem(lark) else None
    return escaped if escaped and not grammar_problem(escaped) else None


def _with_inputs(lines: list[str], inputs: dict[str, str]) -> str:
    """llguidance's JSON of several grammars: the main one (`lines`), then each input's, named `input_<i>`."""
    grammars = [{"lark_grammar": "\n".join(lines)}]
    grammars += [{"name": f"input_{i}", "lark_grammar": lark} for i, lark in enumerate(inputs.values())]
    return json.dumps({"grammars": grammars}, ensure_ascii=False)


@dataclass(frozen=True)
class CallMarkers:
    """What the grammar under "auto" needs of a tokenizer: the call's markers as token ids, and what may stand in the text
    around calls (read once per tokenizer: its added vocabulary, which they come from, is a dictionary built anew
    on every read)."""

    start: str
    end: str
    between: str  # what may stand between stretches of text: the model's other special tokens


_MARKERS: weakref.WeakKeyDictionary[Any, CallMarkers | None] = weakref.WeakKeyDictionary()  # gone with their tokenizer


def _call_markers(tokenizer: Any) -> CallMarkers | None:
    """The markers of a model that writes a call as JSON between markers that are each one token of their own
    (mlx-lm's json_tools parser), else None."""
    parser = getattr(tokenizer, "tool_parser", None)
    if getattr(parser, "__module__", "") != "mlx_lm.tool_parsers.json_tools" or not hasattr(tokenizer, "_tokenizer"):
        return None
    if tokenizer not in _MARKERS:
        added = tokenizer._tokenizer.get_added_vocab()
        start, end = tokenizer.tool_call_start, tokenizer.tool_call_end
        found = start in added and end in added
        _MARKERS[tokenizer] = CallMarkers(f"<[{added[start]}]>", f"<[{added[end]}]>", _between_text(tokenizer, added)) if found else None
    return _MARKERS[tokenizer]


def _between_text(tokenizer: Any, added: dict[str, int]) -> str:
    """What the text around calls may hold between its stretches: the model's other special tokens (a thinking
    model's `<think>`, which llguidance reads as no text), never the call's markers or the end of the answer."""
    markers = {tokenizer.tool_call_start, tokenizer.tool_call_end}
    others = sorted(i for token, i in added.items() if token not in markers and i not in tokenizer.eos_token_ids)
    return f" (<[{','.join(map(str, others))}]> TEXT)*" if others else ""


class FreeformSplitter:
    """The output splitter for a freeform input: the whole answer is one call to the tool, {"input": answer}; an
    answer the token limit cut is the text it is."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.fed = ""

    def feed(self, text: str) -> list[Piece]:
        self.fed += text
        return []

    def finish(self, cut: bool = False) -> list[Piece]:
        if cut:
            return [TextPiece(self.fed)] if self.fed else []
        return [ToolCall(self.name, json.dumps({FREEFORM_INPUT: self.fed}, ensure_ascii=False), new_call_id())]


def call_schema(tools: list[Tool]) -> str:
    """The JSON Schema (its text) of one call to any of `tools`."""
    calls = [_one_call(tool) for tool in tools]
    return json.dumps(calls[0] if len(calls) == 1 else {"anyOf": calls}, ensure_ascii=False)


def _one_call(tool: Tool) -> dict[str, Any]:
    return {"type": "object", "properties": {"name": {"const": function_name(tool)}, "arguments": _arguments(tool)},
            "required": ["name", "arguments"], "additionalProperties": False}


def _arguments(tool: Tool) -> dict[str, Any]:
    """The schema of a tool's arguments: its own parameters only, as strict mode has it; any object when the grammar
    library cannot compile them."""
    from ..decoding.constraint import schema_problem

    parameters = tool.get("function", {}).get("parameters") or ANY_ARGUMENTS
    if "properties" in parameters and "additionalProperties" not in parameters:
        parameters = {**parameters, "additionalProperties": False}
    return ANY_ARGUMENTS if schema_problem(json.dumps(parameters, ensure_ascii=False)) else parameters
