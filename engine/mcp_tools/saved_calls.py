"""An answer's tool calls as saved with the chat: each call, the user's verdict and what came back, so that a
reopened chat shows them again and the conversation reads to the model as it did when they ran.

A call is saved before it runs (asking, then running) and again when it ends, so a quit mid-call leaves a call
that never finished: it reads back as interrupted, to the user and to the model, never as lost or as a success.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from engine.code_fence import fence_for
from engine.mcp_tools.hub import ToolOutcome
from engine.serving.tool_calls import history_call

CallState = Literal["asking", "running", "done", "failed", "denied", "stopped", "limit"]
UNFINISHED = ("asking", "running")  # saved like this, the app closed before the call ended


@dataclass
class CallRecord:
    """One call: what the model asked for, which server offers it, where it stands, and the text it returned."""

    id: str
    name: str
    arguments: str
    server: str = ""
    state: CallState = "asking"
    result: str = ""

    def interrupted_line(self) -> str:
        """What a call saved unfinished reads as once the chat is reopened."""
        if self.state == "asking":
            return f"Not run: SpecChat closed before {self.name} was allowed or denied."
        return f"Interrupted: SpecChat closed before {self.name} returned."

    def outcome(self, live: bool = False) -> ToolOutcome:
        """What the model reads for the call (and the card shows): its result, or the line of what stopped it."""
        if self.state in UNFINISHED:
            return ToolOutcome("" if live else self.interrupted_line(), is_error=not live)
        return ToolOutcome(self.result, is_error=self.state != "done")


@dataclass
class AnswerCalls:
    """An answer's calls, with the text the answer wrote around them (its calls taken out)."""

    text: str
    calls: list[CallRecord] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"text": self.text, "calls": [asdict(call) for call in self.calls]}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> AnswerCalls:
        return cls(str(record.get("text", "")), [CallRecord(**call) for call in record.get("calls", [])])

    @property
    def finished(self) -> bool:
        return all(call.state not in UNFINISHED for call in self.calls)

    def markdown(self) -> str:
        """The answer as the chat shows it, for an export: its text, then each call as its one line and server,
        its result folded (a `<details>` block, which Markdown viewers fold as the card does), and an error, a
        denial or a stop as its line, open."""
        parts = [self.text.strip()] if self.text.strip() else []
        for call in self.calls:
            outcome = call.outcome()
            where = f" · {call.server}" if call.server else ""
            parts.append(f"**Tool call:** `{call_line(call.name, call.arguments)}`{where}")
            if outcome.is_error:
                parts.append(f"*{outcome.text}*")
            else:
                lines = outcome.text.count("\n") + 1
                fence = fence_for(outcome.text)
                parts.append(f"<details><summary>Result ({lines} line{'s' if lines != 1 else ''})</summary>\n\n"
                             f"{fence}text\n{outcome.text}\n{fence}\n\n</details>")
        return "\n\n".join(parts)

    def messages(self, answer: dict[str, Any]) -> list[dict[str, Any]]:
        """The answer as chat templates read it (its text, then its calls) and one tool message per call."""
        calls = [_history_call(call) for call in self.calls]
        results = [{"role": "tool", "tool_call_id": c.id, "name": c.name, "content": c.outcome().text} for c in self.calls]
        return [{**answer, "content": self.text, "tool_calls": calls}, *results]


def call_line(name: str, arguments: str) -> str:
    """The call as one readable line: `add(a=2, b=40)`, or the arguments as written when they are not an object."""
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return f"{name}({arguments})"
    if not isinstance(value, dict):
        return f"{name}({arguments})"
    return f"{name}(" + ", ".join(f"{key}={json.dumps(v, ensure_ascii=False)}" for key, v in value.items()) + ")"


def _history_call(call: CallRecord) -> dict[str, Any]:
    """The call as templates read it: its arguments as an object (text that is not one, kept under "value")."""
    try:
        return history_call(call.id, call.name, call.arguments)
    except ValueError:
        return history_call(call.id, call.name, {"value": call.arguments})
