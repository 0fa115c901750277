"""One tool turn of the app's chat: the calls in the model's answer, the user's permission, and the messages
that carry the calls and their results back into the conversation for the answer to go on.

The app's chat offers the MCP servers' tools to the chat template like the server's APIs do, and reads the calls
with the same `OutputSplitter` (the family's markers, and calls written without them). What is new here is the
user in the loop: each call is allowed once, always (for that tool, in this chat) or denied, and a denied call
still gets a tool message, so that the model reads why nothing ran instead of a conversation with a hole in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.mcp_tools.hub import McpHub, ToolOutcome
from engine.serving.pieces import ToolCall
from engine.serving.tool_calls import OutputSplitter, Tool, history_call

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


def run_call(hub: McpHub, call: ToolCall, allowed: bool) -> ToolOutcome:
    """The call's result, or what the model is told when the user denied it or its arguments are not an object."""
    if not allowed:
        return ToolOutcome(f"The user denied the call to {call.name}; do not call it again for this request.", is_error=True)
    try:
        arguments = call.arguments_object()
    except json.JSONDecodeError as error:
        return ToolOutcome(f"The arguments for {call.name} are not valid JSON ({error}).", is_error=True)
    return hub.call(call.name, arguments)


def turn_messages(text: str, calls: list[ToolCall], outcomes: list[ToolOutcome]) -> list[dict[str, Any]]:
    """The assistant's message with its calls, then one tool message per result, as chat templates read them."""
    assistant = {"role": "assistant", "content": text,
                 "tool_calls": [history_call(c.id, c.name, c.arguments_object()) for c in calls]}
    results = [{"role": "tool", "tool_call_id": c.id, "name": c.name, "content": o.text} for c, o in zip(calls, outcomes)]
    return [assistant, *results]
