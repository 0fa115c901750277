"""OpenAI request fields the server reads but cannot honour, said rather than dropped without a word.

A client that sets `best_of` or `suffix` expects a different answer than one that does not; served as if it had
not asked, it cannot tell that its setting did nothing. Each such field set to anything but the value
that asks for nothing becomes a note (the `X-SpecChat-Warning` header and the server's log line), and the request
is served. `echo` is refused instead: its response would have the prompt and its tokens' logprobs in front of the
answer, which an evaluation harness reads as the prompt's scores, so an answer without them would be read wrong.
"""

from __future__ import annotations

from typing import Any

from .api_error import ApiError

# field -> (the values that ask for nothing, what the server does instead)
UNHONOURED: dict[str, tuple[tuple[Any, ...], str]] = {
    "best_of": ((1,), "one answer is generated and returned"),
    "suffix": (("",), "not used: the answer continues the prompt only"),
}


def unhonoured_notes(body: dict[str, Any]) -> list[str]:
    """A note for each field the request set that the server does not honour (absent or null: nothing asked)."""
    notes = []
    for name, (nothing, instead) in UNHONOURED.items():
        value = body.get(name)
        if value is not None and not any(value == v and type(value) is type(v) for v in nothing):
            notes.append(f"{name} {instead}")
    return notes


def refuse_echo(body: dict[str, Any]) -> None:
    """A 400 for `echo: true`, which asks for the prompt's tokens scored in front of the answer."""
    if body.get("echo") not in (None, False):
        raise ApiError(400, "'echo' is not supported: the server does not score the prompt's tokens. Send echo false "
                       "(the prompt is the one you sent).", param="echo")
