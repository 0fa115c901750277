"""A required tool call under grammar: tool_choice "required" or a named tool holds the answer to a call.

Asking for a call in the prompt is not enough: at temperature 0 a small model answers with text every time, and
the request failed. So the answer is constrained, for draft and target alike, to a call as JSON the output
splitter reads (`loose_calls`: a bare `{"name": ..., "arguments": {...}}` opening the answer): the name one of the
tools the choice allows, the arguments that tool's parameter schema. It reuses the engine's output constraint
(`decoding/constraint.py`, the one `response_format` uses), so speculation stays exact under it: every
distribution the acceptance rule compares is masked alike. A tool whose parameter schema the grammar library
cannot compile still gets its name enforced, with any JSON object as its arguments. A named custom tool (Codex's
apply_patch) whose Lark grammar compiles has its whole answer held to that grammar instead (`FreeformSplitter`). The arguments take only the
parameters the tool declares (as OpenAI's strict mode has it): left open, a sampling model invents keys until the
token limit cuts it. An answer the limit cuts anyway comes back as the text it is, with finish reason "length".
"""

from __future__ import annotations

import json
from typing import Any

from ..params import GenerationParams
from .pieces import Piece, TextPiece, ToolCall, new_call_id
from .responses_tools import FREEFORM_INPUT
from .tool_calls import Tool, Tooling, function_name

ANY_ARGUMENTS = {"type": "object"}


def constrained(tooling: Tooling, params: GenerationParams) -> GenerationParams:
    """`params` with the answer held to a call when the choice requires one (else as they are); for a named custom
    tool with a grammar, held to that grammar (the whole answer is its input)."""
    if not tooling.choice.requires_call:
        return params
    if freeform_input(tooling):
        return params.replace(json_schema=None, grammar=tooling.freeform[tooling.choice.name])  # type: ignore[index]
    return params.replace(json_schema=call_schema(tooling.template_tools() or []))


def freeform_input(tooling: Tooling) -> str | None:
    """The custom tool whose input the whole answer is (tool_choice names it and it has a grammar llguidance
    compiles), else None: the one case a grammar-described input can be constrained, since inside a JSON call it
    would be an escaped string the grammar does not describe."""
    from ..decoding.constraint import grammar_problem

    name = tooling.choice.name if tooling.choice.mode == "named" else None
    lark = tooling.freeform.get(name) if name else None
    return name if lark and not grammar_problem(lark) else None


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
    from ..decoding.constraint import schema_problem

    parameters = tool.get("function", {}).get("parameters") or ANY_ARGUMENTS
    if "properties" in parameters and "additionalProperties" not in parameters:
        parameters = {**parameters, "additionalProperties": False}  # the tool's own parameters, as strict mode has it
    if schema_problem(json.dumps(parameters, ensure_ascii=False)):
        parameters = ANY_ARGUMENTS
    return {"type": "object", "properties": {"name": {"const": function_name(tool)}, "arguments": parameters},
            "required": ["name", "arguments"], "additionalProperties": False}
