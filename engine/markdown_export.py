"""A conversation as a Markdown file: a heading, then each message under its speaker.

An answer stopped or cut inside a code block has no closing fence; exported as it is, the fence ran on and swallowed
every message after it into the code. Its fence is closed where the answer ends.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class Message(Protocol):
    role: str
    summary: str

    @property
    def prompt_text(self) -> str:
        """The message as the model read it (a question's attached files included)."""


def closed_fences(text: str) -> str:
    """`text` with a code fence left open at its end closed (CommonMark's rule: the same character, as long or longer)."""
    open_fence = ""
    for line in text.split("\n"):
        match = FENCE.match(line)
        if not match:
            continue
        fence = match.group(1)
        if not open_fence:
            open_fence = fence
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not line.strip().strip(fence[0]):
            open_fence = ""
    return f"{text}\n{open_fence}" if open_fence else text


def conversation_markdown(title: str, messages: Iterable[Message]) -> str:
    lines = [f"# {title}", ""]
    for message in messages:
        speaker = "You" if message.role == "user" else "Assistant"
        lines += [f"**{speaker}:**", "", closed_fences(message.prompt_text.rstrip()), ""]
        if message.summary:
            lines += [f"*{message.summary}*", ""]
    return "\n".join(lines).rstrip() + "\n"
