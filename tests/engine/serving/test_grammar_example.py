"""The example a custom tool's grammar is shown as: text the grammar takes, its free text as placeholders, and
None (the grammar shown instead) where the grammar is not covered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.serving.custom_tools import custom_tool
from engine.serving.grammar_example import grammar_example

CODEX_TOOL = json.loads((Path(__file__).parent / "fixtures" / "codex_apply_patch_tool.json").read_text())["tool"]
CODEX_GRAMMAR = CODEX_TOOL["format"]["definition"]


def test_codex_apply_patch_is_shown_as_a_patch_its_grammar_takes(takes) -> None:
    example = grammar_example(CODEX_GRAMMAR)
    assert example == "*** Begin Patch\n*** Add File: <filename>\n+<add line>\n*** End Patch"
    assert takes(CODEX_GRAMMAR, example)


@pytest.mark.parametrize("lark, example", [
    ('start: "a" ("b" | "c")+ "d"? "e"* ["f"] "g"', "abg"),  # first alternative; +, once; ?, * and [ ] left out
    ('start: item ~ 2..3 "."\nitem: "x" " "', "x x ."),  # ~ n..m: the fewest
    ('start: NAME "=" INT\nNAME: /[a-z]+/\n%import common.INT', "x=0"),  # a placeholder the regex refuses: a letter
    ('start: "(" start? ")"', "()"),  # a rule that refers to itself, optionally
    ('start: "a" LF  // a line\n?b: "b"\n%import common.LF  // the newline', "a\n"),  # comments, a ?rule
    ('start: key ": " value\nkey: /[^:]+/\nvalue: /.+/ -> text', "<key>: <value>"),
])
def test_an_example_is_written_from_each_rules_first_alternative(takes, lark, example) -> None:
    assert grammar_example(lark) == example
    assert takes(lark, example)


@pytest.mark.parametrize("lark", ['start: "a" start', "start: ESCAPED_STRING\n%import common.ESCAPED_STRING",
                                  'start: "a"\n%ignore " "', 'start: x', 'start: "a" {', 'rule: "a"'])
def test_a_grammar_not_covered_gives_none(lark) -> None:
    assert grammar_example(lark) is None


def test_the_tool_description_shows_the_example_and_not_the_grammars_words() -> None:
    """Shown `add_hunk: "*** Add File: " filename LF add_line+`, the 0.5B wrote `*** Add File: notes.txt LF
    add_line+`; the description now holds no rule name for it to copy."""
    about = custom_tool(CODEX_TOOL)["function"]["parameters"]["properties"]["input"]["description"]
    assert about.endswith(grammar_example(CODEX_GRAMMAR))
    assert "add_line" not in about and "LF" not in about


def test_a_grammar_without_an_example_is_shown_as_it_is() -> None:
    recursive = 'start: "a" start'
    tool = {"name": "loop", "format": {"type": "grammar", "syntax": "lark", "definition": recursive}}
    assert custom_tool(tool)["function"]["parameters"]["properties"]["input"]["description"].endswith(recursive)
