"""A Lark grammar's language as it reads inside a JSON string: each text the grammar matches, JSON-escaped.

A custom tool's input (Codex's apply_patch) is described by a Lark grammar over the raw text, but a model that
calls tools in JSON writes that input as a JSON string: `"*** Begin Patch\\n+hi\\n..."`, a newline as `\\n`, a quote
as `\\"`. To hold the call's string to the tool's grammar, the grammar is rewritten to match the escaped text:
every terminal (string literal and regex) is rewritten, since escaping works character by character, and every rule
is made a terminal: llguidance's lexer is greedy, so a line's text (`/.*/`) followed by its newline would read the
`\\` of the escaped newline as the start of an escaped character and never end; one terminal has no such boundary.
A grammar that is not regular (a rule that refers to itself) then does not compile, and is left unconstrained. The escapes are json.dumps's (`\\"`, `\\\\`, `\\n`, `\\t`, `\\r`, `\\b`, `\\f`, `\\u00XX` for the other control
characters; everything else is written as itself), so `json.loads` gives back the text the grammar describes.

What cannot be rewritten safely (a `%json` block, an import of a `common` terminal not listed here, a regex Python's
`re` cannot read) gives None: the input is then left unconstrained rather than wrongly constrained.
"""

from __future__ import annotations

import ast
import json
import re

SPECIAL = '"\\' + "".join(chr(i) for i in range(0x20))  # the characters JSON escapes
PLAIN = r'[^"\\\x00-\x1f]'
ESCAPED_CHARACTERS = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}
COMMON = {  # Lark's common terminals that grammars import, written out so that they are rewritten too
    "LF": r'"\n"', "CR": r'"\r"', "NEWLINE": r'("\r"? "\n")+', "WS": r"/[ \t\f\r\n]+/", "WS_INLINE": r"/[ \t]+/",
    "DIGIT": r"/[0-9]/", "INT": r"/[0-9]+/", "LCASE_LETTER": r"/[a-z]/", "UCASE_LETTER": r"/[A-Z]/",
    "LETTER": r"/[a-zA-Z]/", "WORD": r"/[a-zA-Z]+/", "CNAME": r"/[_a-zA-Z][_a-zA-Z0-9]*/",
}
_RULE = re.compile(r"(?m)^[ \t]*[?!]?([a-z_][\w-]*)\s*(?:\.\d+)?\s*:")
_RULE_PREFIX = re.compile(r"(?m)^([ \t]*)[?!](?=[a-z_][\w-]*\s*(?:\.\d+)?\s*:)")
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"i?|/(?!/)(?:\\.|[^/\\\n])+/[imslux]*|//[^\n]*|#[^\n]*|%import[^\n/#]*|%json|[^"/#%]+|.',
                    re.DOTALL)


class Unescapable(ValueError):
    """A part of the grammar this rewriting does not cover."""


def json_string_grammar(lark: str) -> str | None:
    """`lark` rewritten to match its texts JSON-escaped (without the string's quotes); None if it cannot be."""
    rules = set(_RULE.findall(lark))
    if "start" not in rules or "%ignore" in lark:
        return None
    lark = _RULE_PREFIX.sub(r"\1", lark)  # `?rule:` and `!rule:` shape a parse tree, which a terminal has not
    try:
        body = "".join(_rewritten(token, rules) for token in _TOKEN.findall(lark))
    except (Unescapable, re.error, SyntaxError, ValueError):
        return None
    return f"start: {_terminal('start')}\n{body}"


def _terminal(rule: str) -> str:
    return "T_" + rule.upper().replace("-", "_")


def _folded(chunk: str, rules: set[str]) -> str:
    """Grammar text between literals and regexes, its rules made terminals (and their aliases dropped)."""
    chunk = re.sub(r"->\s*[\w-]+", "", chunk)
    return re.sub(r"(?<![\w-])[a-z_][\w-]*(?![\w-])", lambda m: _terminal(m[0]) if m[0] in rules else m[0], chunk)


def _rewritten(token: str, rules: set[str]) -> str:
    if token.startswith("%import"):
        return _imported(token)
    if token == "%json":
        raise Unescapable("an inline JSON schema")
    if token.startswith("//") or token.startswith("#"):
        return ""
    if token.startswith('"') and len(token) > 1:
        return _literal(token)
    if token.startswith("/") and len(token) > 2:
        body, flags = token[1:].rsplit("/", 1)
        return "/" + escaped_regex(body) + "/" + flags
    return _folded(token, rules)


def _imported(line: str) -> str:
    """`%import common.X` (or `common (X, Y)`) as the definitions of those terminals, rewritten."""
    match = re.fullmatch(r"%import\s+common\s*(?:\.\s*(\w+)|\(([\w\s,]+)\))\s*", line)
    if not match:
        raise Unescapable(line)
    names = [match.group(1)] if match.group(1) else [n.strip() for n in match.group(2).split(",") if n.strip()]
    if any(name not in COMMON for name in names):
        raise Unescapable(line)
    return "\n".join(f"{name}: " + "".join(_rewritten(t, set()) for t in _TOKEN.findall(COMMON[name])) for name in names)


def _literal(token: str) -> str:
    """A string literal, matching its text escaped."""
    if token.endswith("i"):
        raise Unescapable("a case-insensitive literal")
    text = ast.literal_eval(token)
    return json.dumps(_escape(text), ensure_ascii=False)


def _escape(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def escaped_regex(source: str) -> str:
    """A regex (Rust's syntax, as llguidance reads it) matching what `source` matches, JSON-escaped."""
    out, i = [], 0
    while i < len(source):
        char = source[i]
        if char == "[":
            end = _class_end(source, i)
            out.append(_class(source[i:end]))
            i = end
        elif char == "\\":
            end = _escape_end(source, i)
            piece = source[i:end]
            out.append(_class("[" + piece + "]") if piece[1] in "dDwWsSpP" else _char(piece))
            i = end
        elif char == ".":
            out.append(_class(r"[^\n]"))
            i += 1
        else:
            out.append(_char(char))
            i += 1
    return "".join(out)


def _char(piece: str) -> str:
    """One character of the regex (or an escape naming one), as it is written escaped."""
    char = _character(piece)
    return piece if char is None or char not in SPECIAL else "(?:" + re.escape(_escape(char)) + ")"


def _character(piece: str) -> str | None:
    """The character a piece of a regex stands for: itself, an escaped punctuation mark, `\\n` and its kind, or
    `\\x41` / `\\u0041` / `\\u{41}`; None for an escape that is no character (an assertion such as `\\b`)."""
    if not piece.startswith("\\"):
        return piece
    kind = piece[1]
    if not kind.isalnum():
        return kind
    if kind in "xuU":
        return chr(int(piece[2:].strip("{}"), 16))
    return ESCAPED_CHARACTERS.get(kind)


def _class(source: str) -> str:
    """A character class: its plain characters as they are, each special one it holds as its escape."""
    compiled = re.compile(source)
    held = [c for c in SPECIAL if compiled.fullmatch(c)]
    if not held:
        return source
    short = [re.escape(_escape(c)) for c in held if not _escape(c).startswith("\\u")]
    coded = [_escape(c)[-2:] for c in held if _escape(c).startswith("\\u")]
    codes = [r"\\u00(?:" + "|".join(coded) + ")"] if coded else []
    return "(?:" + "|".join([f"[{source}&&{PLAIN}]", *short, *codes]) + ")"


def _class_end(source: str, start: int) -> int:
    """The index after the class opening at `start` (a leading `]` is a character; nested classes count)."""
    i = start + 1 + (source[start + 1 : start + 2] == "^")
    i += source[i : i + 1] == "]"
    depth = 1
    while i < len(source):
        if source[i] == "\\":
            i += 2
            continue
        depth += {"[": 1, "]": -1}.get(source[i], 0)
        i += 1
        if depth == 0:
            return i
    raise Unescapable(f"an unclosed class in {source!r}")


def _escape_end(source: str, start: int) -> int:
    """The index after the escape at `start` (`\\n`, `\\x41`, `\\u{41}`, `\\p{L}`...)."""
    kind = source[start + 1 : start + 2]
    if kind in ("x", "u", "U", "p", "P") and source[start + 2 : start + 3] == "{":
        return source.index("}", start) + 1
    return start + {"x": 4, "u": 6, "U": 10}.get(kind, 2)
