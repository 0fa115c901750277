"""What a server job's answer is made of, as the APIs render it: text, a thinking model's reasoning, and tool calls.

Kept apart from `tool_calls.py` (which finds the calls in a streamed answer) so that every way of finding them
(`tool_calls.OutputSplitter` in the template's envelope, `loose_calls.py` without it, `tool_grammar.py` under a
grammar) builds on the same pieces without importing one another.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TextPiece:
    """Text of the answer (outside any tool call), with the logprobs of the tokens since the last piece when the
    request asked for them (`token_logprobs.py`'s entries)."""

    text: str
    logprobs: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ReasoningPiece:
    """Text of a thinking model's reasoning (never searched for tool calls)."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """One call the model made: `arguments` is a JSON object's text, as OpenAI sends it."""

    name: str
    arguments: str
    id: str = field(default_factory=lambda: new_call_id())

    def arguments_object(self) -> dict[str, Any]:
        """The arguments as an object (Anthropic's `input`); a non-object is wrapped, never dropped."""
        value = json.loads(self.arguments)
        return value if isinstance(value, dict) else {"value": value}


Piece = TextPiece | ToolCall
AnswerPiece = Piece | ReasoningPiece  # what a job delivers besides the engine's events


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]
