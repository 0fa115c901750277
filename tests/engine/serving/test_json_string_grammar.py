"""A Lark grammar rewritten to match its texts JSON-escaped, checked with llguidance on the tiny tool model's
tokenizer: the escaped text of every text the grammar takes is taken, the raw text and texts outside it are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.decoding.constraint import grammar_problem
from engine.serving.json_string_grammar import json_string_grammar

# A grammar shaped like Codex's apply_patch: lines of any text (`.*`), each ended by a newline.
PATCH = r'''start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?
hunk: add_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
update_hunk: "*** Update File: " filename LF change+
filename: /(.+)/
add_line: "+" /(.*)/ LF -> line
?change: ("@@" | "@@ " /(.+)/) LF | ("+" | "-" | " ") /(.*)/ LF
%import common.LF  // the newline
'''
CODEX_TOOL = json.loads((Path(__file__).parent / "fixtures" / "codex_apply_patch_tool.json").read_text())["tool"]
EDIT = '*** Begin Patch\n*** Update File: a "b".py\n@@ def f():\n-    return "x\\y"\n+    return 1\tok\n*** End Patch\n'


def test_the_escaped_grammar_takes_exactly_the_escaped_texts(takes) -> None:
    escaped = json_string_grammar(PATCH)
    assert escaped is not None and grammar_problem(escaped) is None
    assert takes(PATCH, EDIT) and takes(escaped, json.dumps(EDIT)[1:-1])
    assert not takes(escaped, EDIT)  # raw newlines and quotes are not JSON
    assert not takes(escaped, json.dumps("*** Begin Patch\n*** Delete File: a.py\n*** End Patch\n")[1:-1])


CODEX_PATCHES = [  # (patch, whether Codex's grammar takes it)
    (EDIT + " \n", False),  # a context line after the end
    ('*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    print("hi")\n+    print("a\\tb")\n \n*** End Patch\n', True),
    ("*** Begin Patch\n*** Add File: a.txt\n+\n+x\n*** End Patch", True),
    ("*** Begin Patch\n*** Delete File: old.txt\n*** Update File: b.py\n*** Move to: c.py\n@@\n x\n*** End of File\n*** End Patch\n", True),
    ("*** Update File: a.py\n+x\n*** End Patch\n", False),
    ("*** Begin Patch\n*** Add File: a.txt\nno plus\n*** End Patch\n", False),
    ("*** Begin Patch\n*** End Patch\n", False),
]


@pytest.mark.parametrize("patch, valid", CODEX_PATCHES)
def test_codex_apply_patch_grammar_rewritten_takes_its_patches_escaped(takes, patch, valid) -> None:
    """The real case: the Lark grammar Codex CLI sends for apply_patch compiles rewritten, and takes a patch
    escaped exactly when it takes the patch itself."""
    lark = CODEX_TOOL["format"]["definition"]
    escaped = json_string_grammar(lark)
    assert escaped is not None and grammar_problem(escaped) is None
    assert takes(lark, patch) == valid
    assert takes(escaped, json.dumps(patch)[1:-1]) == valid and not takes(escaped, patch)


@pytest.mark.parametrize("source, text", [(r".*", 'a"\\\tz'), (r"[^x]+", "\n\u0001é"), (r"\s+", " \n\t"), (r'x"\\y', 'x"\\y'),
                                          (r"a\nb\x22", 'a\nb"')])
def test_a_regex_takes_its_texts_escaped_and_not_raw(takes, source, text) -> None:
    escaped = json_string_grammar(f"start: /{source}/")
    assert escaped is not None and takes(f"start: /{source}/", text)
    assert takes(escaped, json.dumps(text, ensure_ascii=False)[1:-1]) and not takes(escaped, text)


def test_a_dot_takes_no_escaped_newline(takes) -> None:
    """`.` is any character but a newline, and `\\n` is how a newline reads escaped."""
    escaped = json_string_grammar("start: /a.*/")
    assert takes(escaped, "a\\tb") and not takes(escaped, "a\\nb")


@pytest.mark.parametrize("lark", ['start: %json {"type": "string"}', "start: ESCAPED_STRING\n%import common.ESCAPED_STRING",
                                  'start: "a"+\n%ignore " "', 'rule: "a"'])
def test_what_cannot_be_rewritten_safely_is_none(lark) -> None:
    assert json_string_grammar(lark) is None
