"""MCP tools in the chat: the tools offered to each answer, and the tool round after an answer that calls them.

An answer that ends with calls to offered tools stays the session's running answer (Send reads Stop) while its
calls are asked about one by one (unless that tool was allowed Always in this chat), run off the GUI thread, and
saved with the answer as they go. Then the answer goes on as a new answer after the results, generated like any
other: with speculation, measured in the panel. A Stop ends the round where it is; a round past MAX_TOOL_ROUNDS
in a row runs nothing and says so, so a model that keeps calling cannot loop for ever.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from engine.events import GenerationResult
from engine.mcp_tools.hub import ToolOutcome
from engine.mcp_tools.saved_calls import AnswerCalls, CallRecord
from engine.mcp_tools.tool_turn import Permissions, Verdict
from engine.serving.pieces import ToolCall
from engine.serving.tool_calls import TOOL_CALLING_FAMILIES

from .mcp_call import McpCall
from .mcp_servers import McpServers
from .streaming_answer import StreamingAnswer

MAX_TOOL_ROUNDS = 8


def unseen_tools_line(pair, tools: list) -> str:  # pair: worker.PairInfo | None
    """The line over the message box when MCP tools are on but the loaded model's chat template cannot show them
    (its answers then go without tools, which the user would otherwise never learn); "" otherwise."""
    if not tools or pair is None or (pair.calls_tools and pair.find_calls is not None):
        return ""
    return (f"MCP tools not offered: this model's chat template cannot show tools. Load one that calls tools "
            f"({TOOL_CALLING_FAMILIES}) or turn them off in Settings.")


def limit_line() -> str:
    return (f"Not run: the answer called tools {MAX_TOOL_ROUNDS} times in a row, the most one question may. "
            "Send a message to let it go on.")


class ChatTools(QObject):
    """The servers' tools in the chat, and the round in progress.

    Signals:
        calls_shown(int, AnswerCalls, int): an answer's calls as they stand (its message id, its calls, the index of
            the call waiting for the user's verdict, or -1).

    Attributes:
        servers: the MCP servers and their hub.
        live: the running round's calls (None between rounds); message_id, conversation_id: its answer.
    """

    calls_shown = Signal(int, object, int)

    def __init__(self, session, idle: Callable[[], None]) -> None:  # session: ChatSession
        super().__init__(session)
        self.session, self._idle = session, idle
        self.servers = McpServers(session.settings, self)
        self.live: AnswerCalls | None = None
        self.message_id = self.conversation_id = 0
        self._offered: list[dict] | None = None
        self._permissions: dict[int, Permissions] = {}
        self._call: McpCall | None = None
        self._index = -1
        self._stopped = False

    def offered(self) -> list[dict] | None:
        """The tools for the next answer: the connected servers', when tools are on and the template shows tools."""
        pair, tools = self.session.pair, self.servers.tools
        usable = tools and pair is not None and pair.calls_tools and pair.find_calls is not None
        self._offered = [tool.as_template_tool() for tool in tools] if usable else None
        return self._offered

    def take(self, answer: StreamingAnswer, result: GenerationResult) -> bool:
        """Whether the finished answer starts a round (the session stays busy until it ends); its calls are shown
        once the window has finished the answer's bubble."""
        pair = self.session.pair
        if not self._offered or pair is None or pair.find_calls is None or result.finish_reason == "cancelled":
            return False
        text, calls = pair.find_calls(self._offered, answer.text)
        if not calls:
            return False
        hub = self.servers.hub
        records = [CallRecord(c.id, c.name, c.arguments, hub.server_of(c.name) if hub else "") for c in calls]
        self.message_id, self.conversation_id = answer.message_id, answer.conversation_id
        if self._rounds_before() >= MAX_TOOL_ROUNDS:
            for record in records:
                record.state, record.result = "limit", limit_line()
            limited = AnswerCalls(text, records)
            self.session.store.set_tool_calls(self.message_id, limited.record())
            QTimer.singleShot(0, lambda m=self.message_id: self.calls_shown.emit(m, limited, -1))
            return False
        self.live, self._stopped = AnswerCalls(text, records), False
        self._save()
        QTimer.singleShot(0, self._next)
        return True

    def decide(self, message_id: int, index: int, verdict: Verdict) -> None:
        """The user's verdict on the call the round waits for."""
        if self.live is None or message_id != self.message_id or index != self._index or self._call is not None:
            return
        record = self.live.calls[index]
        allowed = self._permissions.setdefault(self.conversation_id, Permissions()).decide(_tool_call(record), verdict)
        self._run(allowed)

    def stop(self) -> None:
        """End the round: a running call is stopped, the calls not run yet are not; the answer does not go on."""
        if self.live is None:
            return
        self._stopped = True
        for record in self.live.calls:
            if record.state == "asking":
                record.state, record.result = "stopped", f"Stopped: {record.name} was not run."
        if self._call is not None:
            self._call.stop()  # its outcome ends the round
        else:
            self._show(-1)
            self._end()

    def shutdown(self) -> None:
        """The app quits: the round ends as saved (a call asking or running reads back as interrupted)."""
        if self.live is not None:
            self.live = None
            self._idle()
        self.servers.close()

    def _next(self) -> None:
        """Run or ask about the next call; after the last, the answer goes on."""
        if self.live is None:
            return
        self._index = next((i for i, record in enumerate(self.live.calls) if record.state == "asking"), -1)
        if self._index < 0:
            self._end()
        elif self._permissions.setdefault(self.conversation_id, Permissions()).needs_asking(_tool_call(self.live.calls[self._index])):
            self._show(self._index)
        else:
            self._run(allowed=True)

    def _run(self, allowed: bool) -> None:
        if self.live is None:
            return  # the round ended (Stop, a chat switch) before the call was decided
        record = self.live.calls[self._index]
        hub = self.servers.hub
        if hub is None:
            self._done(ToolOutcome("The MCP servers are not connected (see Settings).", is_error=True))
            return
        record.state = "running" if allowed else "denied"
        self._save()
        self._show(-1)
        self._call = McpCall(hub, _tool_call(record), self)
        self._call.done.connect(self._done)
        self._call.run(allowed)

    def _done(self, outcome: ToolOutcome) -> None:
        if self.live is None:
            return  # the app quit while the call ran
        record, stopped = self.live.calls[self._index], self._call is not None and self._call.stopped
        if record.state in ("running", "asking"):
            record.state = "stopped" if stopped else ("failed" if outcome.is_error else "done")
        record.result, self._call = outcome.text, None
        self._save()
        self._show(-1)
        if self._stopped:
            self._end()
        else:
            self._next()

    def _end(self) -> None:
        self.live, self._index = None, -1
        self._idle()
        if not self._stopped:
            self.session.start_answer(self.conversation_id)

    def _show(self, asking: int) -> None:
        self.calls_shown.emit(self.message_id, self.live, asking)

    def _save(self) -> None:
        if self.live is not None:
            self.session.store.set_tool_calls(self.message_id, self.live.record())

    def _rounds_before(self) -> int:
        """How many answers in a row before this one called tools (since the user's last message)."""
        rounds = 0
        for message in reversed(self.session.store.messages(self.conversation_id)[:-1]):
            if message.role != "assistant" or not message.tool_calls:
                break
            rounds += 1
        return rounds


def _tool_call(record: CallRecord) -> ToolCall:
    return ToolCall(record.name, record.arguments, record.id)
