"""OpenAI request fields the server reads but cannot honour, said rather than dropped without a word.

A client that sets `best_of` expects a different answer than one that does not; served as if it had not asked, it
cannot tell that its setting did nothing. Each such field set to anything but the value that asks for nothing
becomes a note (the `X-SpecChat-Warning` header and the server's log line), and the request is served.
"""

from __future__ import annotations

from typing import Any

# field -> (the values that ask for nothing, what the server does instead)
UNHONOURED: dict[str, tuple[tuple[Any, ...], str]] = {
    "best_of": ((1,), "one answer is generated and returned"),
}


def unhonoured_notes(body: dict[str, Any]) -> list[str]:
    """A note for each field the request set that the server does not honour (absent or null: nothing asked)."""
    notes = []
    for name, (nothing, instead) in UNHONOURED.items():
        value = body.get(name)
        if value is not None and not any(value == v and type(value) is type(v) for v in nothing):
            notes.append(f"{name} {instead}")
    return notes

