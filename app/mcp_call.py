"""One MCP call from the chat, run once the user allowed it, and stoppable.

The call runs on the hub's own thread (engine/mcp_tools/hub.py): neither the GUI thread (Qt's loop) nor the
engine worker's (MLX) waits on it. Its outcome comes back as a signal, which Qt queues to the GUI thread; a Stop
cancels it there, and the server stays connected for the next call.
"""

from __future__ import annotations

from concurrent.futures import Future

from PySide6.QtCore import QObject, Signal

from engine.mcp_tools.hub import McpHub, ToolOutcome
from engine.mcp_tools.tool_turn import refusal
from engine.serving.pieces import ToolCall


def stopped_line(name: str) -> str:
    return f"Stopped: {name} was stopped before it returned."


class McpCall(QObject):
    """Runs or refuses one call and announces its outcome.

    Signals:
        done(ToolOutcome): the result, error, denial, timeout or stop, on the GUI thread.

    Attributes:
        stopped: the call was stopped before it returned.
    """

    done = Signal(object)
    _ran = Signal(object)

    def __init__(self, hub: McpHub, call: ToolCall, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub, self.call = hub, call
        self._future: Future[ToolOutcome] | None = None
        self.stopped = False
        self._ran.connect(self.done)

    def run(self, allowed: bool) -> None:
        """Starts the call (denied or with arguments that are not JSON: its refusal comes back at once)."""
        refused = refusal(self.call, allowed)
        if refused is not None:
            self.done.emit(refused)
            return
        self._future = self.hub.submit(self.call.name, self.call.arguments_object())
        self._future.add_done_callback(self._finished)

    def stop(self) -> None:
        """Stops the running call: its outcome says it was stopped."""
        if self._future is not None:
            self._future.cancel()

    def _finished(self, future: Future[ToolOutcome]) -> None:
        """On the hub's thread (or the GUI thread, for a Stop): the outcome, sent on to the GUI thread."""
        if future.cancelled():
            self.stopped = True
            outcome = ToolOutcome(stopped_line(self.call.name), is_error=True)
        elif future.exception() is not None:
            outcome = ToolOutcome(f"Tool {self.call.name} failed: {future.exception()}", is_error=True)
        else:
            outcome = future.result()
        self._ran.emit(outcome)
