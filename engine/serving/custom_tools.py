"""Custom (freeform) tools, for chat completions and Responses alike: a tool whose input is one free text, not
JSON arguments, its syntax possibly given as a grammar (Codex's apply_patch: a patch, described in Lark).

OpenAI takes them in both APIs, each in its own shape: Responses' `{type: "custom", name, description, format:
{type: "grammar", syntax, definition}}`, chat completions' `{type: "custom", custom: {name, description, format:
{type: "grammar", grammar: {syntax, definition}}}}`, the syntax "lark" or "regex". Chat templates only know
functions, so a custom tool is offered as a function taking one string, `input`, with an example of its grammar's
text in the description (`custom_tool`; the grammars go in `Tooling.freeform`, `grammars`). `tool_grammar` holds
that string to the grammar, and the call comes back in the API's own custom call shape carrying the string
(`call_input`). A regular expression is the Lark grammar of one terminal, so both syntaxes take the one path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .grammar_example import grammar_example
from .pieces import ToolCall
from .tool_calls import Tool, function_tool, history_call

FREEFORM_INPUT = "input"  # the one argument a custom tool is offered with
_LARK_REGEX_ESCAPES = re.compile(r"(\\.)|/|\n", re.DOTALL)  # an escape pair stays; a slash or newline is escaped


def custom_tool(spec: dict[str, Any]) -> Tool:
    """A custom tool's fields (`name`, `description`, `format`) as the function the template is shown.

    Raises ValueError naming what is wrong."""
    grammar = lark_grammar(spec.get("format"))
    about = "The tool's whole input, as free text" + (_form(grammar) if grammar else ".")
    parameters = {"type": "object", "properties": {FREEFORM_INPUT: {"type": "string", "description": about}},
                  "required": [FREEFORM_INPUT]}
    return function_tool(spec.get("name"), spec.get("description"), parameters)


def _form(grammar: str) -> str:
    """How the description states the input's form: an example of it (`grammar_example` says why), or the grammar
    itself where no example can be written."""
    example = grammar_example(grammar)
    if example is None:
        return f", following this Lark grammar:\n{grammar}"
    return f" in a fixed form, for example:\n{example}"


def grammars(specs: Iterable[object]) -> dict[str, str | None]:
    """The custom tools among `specs` (each one's fields, or anything else for a tool of another kind): name -> its
    Lark grammar, None for free text (`Tooling.freeform`)."""
    return {spec["name"]: lark_grammar(spec.get("format")) for spec in specs
            if isinstance(spec, dict) and isinstance(spec.get("name"), str)}


def lark_grammar(form: object) -> str | None:
    """A custom tool's grammar as Lark, from its `format` in either API's shape; None for free text (no format,
    `{type: "text"}`, or a syntax other than Lark and regex)."""
    if not isinstance(form, dict) or form.get("type") != "grammar":
        return None
    nested = form.get("grammar")
    grammar = nested if isinstance(nested, dict) else form  # chat completions nest it
    definition, syntax = grammar.get("definition"), grammar.get("syntax", "lark")
    if not isinstance(definition, str) or not definition:
        return None
    if syntax == "regex":
        return "start: /" + _LARK_REGEX_ESCAPES.sub(lambda m: m[1] or ("\\n" if m[0] == "\n" else "\\/"), definition) + "/"
    return definition if syntax == "lark" else None


def call_input(call: ToolCall) -> str:
    """The input text of a call to a custom tool (the function's one argument)."""
    text = call.arguments_object().get(FREEFORM_INPUT, "")
    return text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)


def history_custom_call(call_id: object, name: object, text: object) -> dict[str, Any]:
    """An earlier call to a custom tool as the function call the template was shown.

    Raises ValueError when the input is not text."""
    if not isinstance(text, str):
        raise ValueError("needs its 'input' text")
    return history_call(call_id, name, {FREEFORM_INPUT: text})
