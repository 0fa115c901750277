"""A conversation as a Markdown file: a heading, then each message under its speaker.

A question is plain text in the chat, and exported so (`verbatim`). An answer stopped or cut inside a code block has
no closing fence; exported as it is, the fence ran on and swallowed
every message after it into the code. Its fence is closed where the answer ends. An answer that called MCP tools is
exported as the chat shows it: its text, then each call as a line with its result folded, not the call markup the
model wrote (engine/mcp_tools/saved_calls.py).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Protocol

from .chat_images import ChatImage

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class Message(Protocol):
    role: str
    content: str
    summary: str
    tool_calls: dict

    @property
    def prompt_text(self) -> str:
        """The message as the model read it (a question's attached files included)."""

    @property
    def images(self) -> list[ChatImage]:
        """A question's images."""


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


def image_markdown(image: ChatImage) -> str:
    """An image inline, as a data URL: the exported file holds it, as the chat does (no path that may move)."""
    kind = "jpeg" if image.data.startswith(b"\xff\xd8") else "webp" if image.data[8:12] == b"WEBP" else "png"
    return f"![{image.name}](data:image/{kind};base64,{base64.b64encode(image.data).decode('ascii')})\n"


def conversation_markdown(title: str, messages: Iterable[Message], system_prompt: str = "") -> str:
    """The file: the title, the chat's own system prompt if it has one (what the answers were asked under), then
    each message under its speaker with its stats line."""
    lines = [f"# {title}", ""]
    if system_prompt.strip():
        lines += ["**System prompt:**", "", verbatim(system_prompt.strip()), ""]
    for message in messages:
        speaker = "You" if message.role == "user" else "Assistant"
        lines += [f"**{speaker}:**", "", *map(image_markdown, message.images), _shown_text(message), ""]
        if message.summary:
            lines += [f"*{message.summary}*", ""]
    return "\n".join(lines).rstrip() + "\n"


def verbatim(text: str) -> str:
    """A question as the chat shows it, plain text: each line on its own (a hard break), and a question with
    indented lines or a fence of its own (pasted code) in a fence longer than any inside it, since Markdown read it
    otherwise: a pasted function lost its indentation."""
    lines = text.split("\n")
    if not any(line[:1] in (" ", "\t") or FENCE.match(line) for line in lines):
        return "  \n".join(lines)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _shown_text(message: Message) -> str:
    """The message's text as the chat shows it: a question verbatim, an answer as Markdown (one that called tools as
    its text and its calls)."""
    if message.role == "user":  # its attached files before it, as fenced code already
        typed, whole = message.content.rstrip(), message.prompt_text.rstrip()
        files = whole[: len(whole) - len(typed)] if whole.endswith(typed) else ""
        return files + verbatim(typed)
    if not message.tool_calls:
        return closed_fences(message.prompt_text.rstrip())
    from .mcp_tools.saved_calls import AnswerCalls  # the MCP SDK is imported only for a chat that used tools

    calls = AnswerCalls.from_record(message.tool_calls)
    return AnswerCalls(closed_fences(calls.text.rstrip()), calls.calls).markdown()
