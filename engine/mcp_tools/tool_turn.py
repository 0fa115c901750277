"""One tool turn of the app's chat: the calls in the model's answer and the user's permission for each (the
calls and results go back into the conversation as `saved_calls.py` saves them).

The app's chat offers the MCP servers' tools to the chat template like the server's APIs do, and reads the calls
with the same `OutputSplitter` (the family's markers, and calls written without them). What is new here is the
user in the loop: each call is allowed once, always (for that tool, in this chat) or denied, and a denied call
still gets a tool message, so that the model reads why nothing ran instead of a conversation with a hole in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.mcp_tools.hub import ToolOutcome
from engine.serving.pieces import ToolCall
from engine.serving.tool_calls import OutputSplitter, Tool

Verdict = Literal["once", "always", "deny"]


@dataclass
class Permissions:
    """The tools the user allowed for the rest of a chat; any other call is asked about first."""

    always: set[str] = field(default_factory=set)

    def needs_asking(self, call: ToolCall) -> bool:
        return call.name not in self.always

    def decide(self, call: ToolCall, verdict: Verdict) -> bool:
        """Records the user's answer; True when the call may run."""
        if verdict == "always":
            self.always.add(call.name)
        return verdict != "deny"


def calls_in(tokenizer: Any, tools: list[Tool], answer: str) -> tuple[str, list[ToolCall]]:
    """The answer's text without its calls, and the calls to offered tools (a name not offered stays text)."""
    splitter = OutputSplitter(tokenizer, tools)
    splitter.feed(answer)
    splitter.finish()
    return splitter.text, splitter.calls


def refusal(call: ToolCall, allowed: bool) -> ToolOutcome | None:
    """What the model is told instead of a result when the user denied the call or its arguments are not JSON;
    None when the call may run."""
    if not allowed:
        return ToolOutcome(f"The user denied the call to {call.name}; do not call it again for this request.", is_error=True)
    try:
        call.arguments_object()
    except json.JSONDecodeError as error:
        return ToolOutcome(f"The arguments for {call.name} are not valid JSON ({error}).", is_error=True)
    return None

