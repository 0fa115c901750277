"""One MCP call from the chat, from the permission prompt to the result on its card.

The call runs on a thread of its own: the hub's `call` blocks until the result or the timeout, and neither the
GUI thread (Qt's loop) nor the engine worker's (MLX) may wait on it. Its outcome comes back as a signal, which
Qt queues to the GUI thread, where the card shows it and the chat goes on with it.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal

from engine.mcp_tools.hub import McpHub, ToolOutcome
from engine.mcp_tools.tool_turn import Permissions, Verdict, run_call
from engine.serving.pieces import ToolCall

from .tool_call_card import ToolCallCard


class McpCall(QObject):
    """Asks (unless the tool was allowed Always), runs or refuses the call, shows the outcome and announces it.

    Signals:
        done(ToolOutcome): the result, error, denial or timeout, on the GUI thread.
    """

    done = Signal(object)
    _ran = Signal(object)

    def __init__(self, hub: McpHub, permissions: Permissions, call: ToolCall, card: ToolCallCard) -> None:
        super().__init__(card)
        self.hub, self.permissions, self.call, self.card = hub, permissions, call, card
        card.decided.connect(self._decided)
        self._ran.connect(self._show)

    def start(self) -> None:
        if self.permissions.needs_asking(self.call):
            self.card.ask()
        else:
            self._run(allowed=True)

    def _decided(self, verdict: Verdict) -> None:
        self._run(self.permissions.decide(self.call, verdict))

    def _run(self, allowed: bool) -> None:
        if allowed:
            self.card.running()
        threading.Thread(target=lambda: self._ran.emit(run_call(self.hub, self.call, allowed)), name="mcp-call", daemon=True).start()

    def _show(self, outcome: ToolOutcome) -> None:
        self.card.show_outcome(outcome)
        self.done.emit(outcome)
