"""Tool calls a model wrote without its template's envelope, found in the answer's text.

Small models often answer a tool request with the call but not the markers their template asks for: Qwen2.5-Coder
writes a bare `{"name": "get_weather", "arguments": {"city": "Paris"}}`; others wrap it in a ```json fence, in
`<tools>…</tools>` or `<function>…</function>` (or Llama's `<function=NAME>{…}</function>`), or write a JSON array
of calls at once. Left as text, the agent prints JSON instead of acting. So when tools were offered, the text
outside the envelope passes through `LooseCalls`: a span that may open such a form is held back until it closes,
then becomes calls if every call in it names an offered tool with an object of arguments, and text otherwise. A
call to a name that was not offered is never made.

A bare object or array counts only at the start of the answer (prose that quotes JSON later is prose); a fence or
a tag counts anywhere, the text before it released as it streams.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .pieces import Piece, TextPiece, ToolCall, new_call_id

ARGUMENT_KEYS = ("arguments", "parameters")  # where a call's arguments may be, the first one present
WRAPPER_KEY = "function"  # OpenAI's `{"function": {...}}` around a call
CALL_KEYS = ("name", *ARGUMENT_KEYS, WRAPPER_KEY)  # the keys `_call` reads a call from
TAG_CLOSERS = {"<tools>": "</tools>", "<function": "</function>"}  # tags besides the envelope that may hold calls
CLOSERS = {"```": "```", **TAG_CLOSERS, "<tool_call>": "</tool_call>"}
OPENERS = tuple(CLOSERS)
FUNCTION_TAG = re.compile(r"<function=([^>\s]+)>(.*)</function>\s*$", re.DOTALL)


class LooseCalls:
    """The answer's text (outside the envelope) as text pieces and the calls written in it.

    Args:
        names: the tools the model may call (those the template showed it).
    """

    def __init__(self, names: set[str]) -> None:
        self._names = names
        self._held = ""
        self._began = False  # whether any non-blank text was released (a bare JSON call must come first)

    def feed(self, text: str) -> list[Piece]:
        """The pieces that `text` (the next text outside the envelope) completes."""
        self._held += text
        pieces: list[Piece] = []
        while self._held:
            start = self._candidate_start()
            if start > 0:
                pieces.append(self._text(self._held[:start]))
                self._held = self._held[start:]
            end = _form_end(self._held) if start < len(self._held) else None
            if end is None:
                break
            pieces += self._decided(self._held[:end])
            self._held = self._held[end:]
        return [p for p in pieces if not isinstance(p, TextPiece) or p.text]

    def finish(self) -> list[Piece]:
        """What is still held once the answer ended: calls if it is a whole form of them, else text."""
        held, self._held = self._held, ""
        return [p for p in self._decided(held) if not isinstance(p, TextPiece) or p.text] if held else []

    def _candidate_start(self) -> int:
        """Where a form may begin in the held text (its length if none can): a bare `{` or `[` opening the answer,
        an opener, or the start of one cut off at the end."""
        held = self._held
        if not self._began:
            stripped = held.lstrip()
            if not stripped or stripped[0] in "{[" or any(o.startswith(stripped[:len(o)]) for o in OPENERS):
                return 0
        found = [i for i in (held.find(o) for o in OPENERS) if i >= 0]
        if found:
            return min(found)
        for cut in range(min(len(held), max(map(len, OPENERS)) - 1), 0, -1):  # the longest cut-off opener first
            if any(o.startswith(held[-cut:]) for o in OPENERS):
                return len(held) - cut
        return len(held)

    def _decided(self, form: str) -> list[Piece]:
        calls = self._calls(form)
        return list(calls) if calls else [self._text(form)]

    def _text(self, text: str) -> TextPiece:
        self._began = self._began or bool(text.strip())
        return TextPiece(text)

    def _calls(self, form: str) -> list[ToolCall] | None:
        """The calls a whole form holds, or None unless every one names an offered tool with object arguments."""
        tagged = FUNCTION_TAG.match(form.strip())
        if tagged:
            values: Any = [{"name": tagged.group(1), "arguments": _json(tagged.group(2))}]
        else:
            values = _json(_unwrapped(form.strip()))
        values = values if isinstance(values, list) else [values]
        calls = [_call(v, self._names) for v in values]
        return calls if calls and all(calls) else None  # type: ignore[return-value]


def _unwrapped(form: str) -> str:
    """A form's JSON: inside its fence (with or without a language) or its tags."""
    for opener, closer in CLOSERS.items():
        if form.startswith(opener) and form.endswith(closer) and len(form) >= len(opener) + len(closer):
            inner = form[len(opener):len(form) - len(closer)]
            if opener == "```":
                inner = re.sub(r"^[A-Za-z]*\n", "", inner)
            elif opener == "<function":
                inner = inner[inner.find(">") + 1:] if inner.startswith(">") else ""
            return inner.strip()
    return form


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _call(value: Any, names: set[str]) -> ToolCall | None:
    """{"name", "arguments" | "parameters"} (or OpenAI's {"function": {...}}) naming an offered tool, as a call."""
    if isinstance(value, dict) and isinstance(value.get(WRAPPER_KEY), dict):
        value = value[WRAPPER_KEY]
    if not isinstance(value, dict) or value.get("name") not in names:
        return None
    arguments: Any = next((value[key] for key in ARGUMENT_KEYS if key in value), {})
    if isinstance(arguments, str):
        arguments = _json(arguments)
    if not isinstance(arguments, dict):
        return None
    return ToolCall(value["name"], json.dumps(arguments, ensure_ascii=False), new_call_id())


def _form_end(held: str) -> int | None:
    """Where the form at the start of `held` (after blanks) ends, or None while it is still open."""
    body = held.lstrip()
    offset = len(held) - len(body)
    for opener, closer in CLOSERS.items():
        if body.startswith(opener):
            at = body.find(closer, len(opener))
            return None if at < 0 else offset + at + len(closer)
        if opener.startswith(body):
            return None  # an opener not yet whole
    if body[:1] in ("{", "["):
        end = _bracket_end(body)
        return None if end is None else offset + end
    return offset + len(body) if body else None


def _bracket_end(text: str) -> int | None:
    """The end of the JSON value opening `text` by its brackets (strings and escapes skipped), None while open."""
    depth, in_string, escaped = 0, False, False
    for i, char in enumerate(text):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None
