"""An example of the text a Lark grammar describes, shown to the model in place of the grammar.

A custom tool's input format comes as a Lark grammar (Codex's apply_patch). Shown the grammar itself, a small model
copies its notation into its input: Qwen2.5-Coder-0.5B, given apply_patch's rule `add_hunk: "*** Add File: "
filename LF add_line+`, wrote `*** Add File: notes.txt LF add_line+`, which the grammar allows (a file name is any
text) and Codex created as a file of that name. An example reads as what to write, so the tool is described by
one: each rule's first alternative, an optional or maybe-repeated part left out, a repeated part written as few
times as it may be (once for `+`), and each free-text terminal (a regex) as a placeholder named after its rule
(`<filename>`). The grammar still holds the input as it is written (`tool_grammar`).

A grammar this does not cover (a rule that only refers back to itself, an import or operator not listed here)
gives None, and the grammar is shown as before.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

COMMON = {"LF": "\n", "CR": "\r", "NEWLINE": "\n", "WS": " ", "WS_INLINE": " ", "DIGIT": "0", "INT": "0",
          "LCASE_LETTER": "a", "UCASE_LETTER": "A", "LETTER": "a", "WORD": "word", "CNAME": "name"}
MAX_DEPTH = 40  # deeper than any format a tool describes: a rule that never ends is refused here
_DEFINITION = re.compile(r"^[?!]?([A-Za-z_]\w*)(?:\.\d+)?\s*:(.*)$", re.DOTALL)
_TOKEN = re.compile(r'\s+|//[^\n]*|"(?:\\.|[^"\\])*"i?|/(?:\\.|[^/\\\n])+/[imslux]*|->\s*\w+|[A-Za-z_]\w*|[|()\[\]?*+]|'
                    r'~\s*\d+(?:\s*\.\.\s*\d+)?')


class Uncovered(ValueError):
    """A part of the grammar this example-writing does not cover."""


@dataclass
class _Tokens:
    items: list[str]
    at: int = 0

    def peek(self) -> str | None:
        return self.items[self.at] if self.at < len(self.items) else None

    def take(self) -> str:
        self.at += 1
        return self.items[self.at - 1]

    def quantifier_after(self, token: str) -> str:
        """The `?`, `*` or `+` after the item `token` opened (just taken): after its closing bracket for a group."""
        at, depth = self.at, 1 if token in ("(", "[") else 0
        while depth and at < len(self.items):
            depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(self.items[at], 0)
            at += 1
        following = self.items[at] if at < len(self.items) else ""
        return following if following in ("?", "*", "+") or following.startswith("~") else ""


def grammar_example(lark: str) -> str | None:
    """One text `lark` describes, its free-text parts as `<placeholders>`; None if the grammar is not covered."""
    try:
        definitions = _definitions(lark)
        if "start" not in definitions:
            return None
        return _Writer(definitions).rule("start", 0) or None
    except (SyntaxError, ValueError, re.error):  # Uncovered is a ValueError
        return None


def _definitions(lark: str) -> dict[str, str]:
    """Rule and terminal name -> its expansion text; `%` directives other than common imports are refused."""
    lines: list[str] = []
    for line in lark.splitlines():
        line = re.sub(r"^\s*//.*$", "", line)
        if line.strip().startswith("%"):
            imported = re.fullmatch(r"\s*%import\s+common\.([A-Z_]+)\s*(//.*)?", line)
            if not imported or imported[1] not in COMMON:
                raise Uncovered(line.strip())
        elif line.strip().startswith("|") and lines:
            lines[-1] += " " + line.strip()
        elif line.strip():
            lines.append(line.strip())
    definitions = {}
    for line in lines:
        found = _DEFINITION.match(line)
        if not found:
            raise Uncovered(line)
        definitions[found[1]] = found[2]
    return definitions


class _Writer:
    """Writes the example, one rule at a time."""

    def __init__(self, definitions: dict[str, str]) -> None:
        self.definitions = definitions

    def rule(self, name: str, depth: int) -> str:
        if name not in self.definitions:
            if name in COMMON:
                return COMMON[name]
            raise Uncovered(name)
        if depth > MAX_DEPTH:
            raise Uncovered(f"{name} never ends")
        tokens = _Tokens(_tokenized(self.definitions[name]))
        text = self._alternatives(tokens, name, depth)
        if tokens.peek() is not None:
            raise Uncovered(self.definitions[name])
        return text

    def _alternatives(self, tokens: _Tokens, rule: str, depth: int, write: bool = True) -> str:
        """The first alternative written (if `write`), the others read past."""
        first = self._sequence(tokens, rule, depth, write)
        while tokens.peek() == "|":
            tokens.take()
            self._sequence(tokens, rule, depth, write=False)
        return first

    def _sequence(self, tokens: _Tokens, rule: str, depth: int, write: bool) -> str:
        text = ""
        while tokens.peek() not in (None, "|", ")", "]"):
            text += self._item(tokens, rule, depth, write)
        return text

    def _item(self, tokens: _Tokens, rule: str, depth: int, write: bool) -> str:
        """One item, written only if the sequence is and the item is neither optional nor maybe-repeated."""
        token = tokens.take()
        quantifier = tokens.quantifier_after(token)
        times = _fewest_times(quantifier)
        write = write and times > 0 and token != "["
        if token in ("(", "["):
            written = self._alternatives(tokens, rule, depth, write)
            if tokens.peek() != (")" if token == "(" else "]"):
                raise Uncovered(f"an unclosed {token}")
            tokens.take()
        elif token.startswith('"'):
            written = ast.literal_eval(token.rstrip("i"))
        elif token.startswith("/"):
            written = _placeholder(token, rule)
        elif re.fullmatch(r"[A-Za-z_]\w*", token):
            written = self.rule(token, depth + 1) if write else ""
        else:
            raise Uncovered(token)
        if quantifier:
            tokens.take()
        return written * times if write else ""


def _fewest_times(quantifier: str) -> int:
    """How often an item with this quantifier must appear: once bare or with `+`, n times with `~ n..m`, else 0."""
    if quantifier.startswith("~"):
        return int(re.findall(r"\d+", quantifier)[0])
    return 1 if quantifier in ("", "+") else 0


def _tokenized(expansion: str) -> list[str]:
    """An expansion's tokens, without spaces, comments and aliases (`-> name`); anything else unknown is refused."""
    tokens, at = [], 0
    while at < len(expansion):
        found = _TOKEN.match(expansion, at)
        if not found:
            raise Uncovered(expansion[at:])
        if not found[0].isspace() and not found[0].startswith(("->", "//")):
            tokens.append(found[0])
        at = found.end()
    return tokens


def _placeholder(regex: str, rule: str) -> str:
    """A regex terminal's stand-in: `<its rule's name>` if the regex allows it, else a single letter or digit."""
    body, flags = regex[1:regex.rindex("/")], regex[regex.rindex("/") + 1:]
    compiled = re.compile(body, sum(getattr(re, f.upper()) for f in flags if f in "imsx"))
    for candidate in (f"<{rule.replace('_', ' ')}>", "x", "0"):
        if compiled.fullmatch(candidate):
            return candidate
    raise Uncovered(regex)
