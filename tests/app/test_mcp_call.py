"""One MCP call run from the chat under pytest-qt, against the FastMCP demo server over stdio and HTTP: its outcome
arrives on the GUI thread, a denial at once, and a Stop ends a hung call with the server still connected."""

from __future__ import annotations

import sys

import pytest

from app.mcp_call import McpCall, stopped_line
from engine.mcp_tools.hub import McpHub, ToolOutcome
from engine.mcp_tools.servers_config import ServerConfig
from engine.serving.pieces import ToolCall
from tests.engine.mcp_tools.test_hub import DEMO, http_server  # noqa: F401 - the fixture, shared


def _hub(server: ServerConfig, timeout: float = 30.0) -> McpHub:
    hub = McpHub([server], timeout=timeout)
    hub.start()
    return hub


@pytest.fixture(scope="module")
def stdio_hub():
    """One demo server over stdio for the module's calls: none needs a fresh one (a Stop leaves the server
    connected, which the Stop test checks with the call after it), and each costs a Python process importing the
    SDK."""
    hub = _hub(ServerConfig("demo", command=sys.executable, args=(DEMO,)))
    yield hub
    hub.close()


def _run(qtbot, hub, name, arguments="{}", allowed=True) -> list[ToolOutcome]:
    call = McpCall(hub, ToolCall(name, arguments))
    with qtbot.waitSignal(call.done, timeout=30_000) as done:
        call.run(allowed)
    return done.args


def test_an_allowed_call_returns_its_result(qtbot, stdio_hub):
    assert _run(qtbot, stdio_hub, "add", '{"a": 2, "b": 40}') == [ToolOutcome("42")]


def test_a_denied_call_runs_nothing_and_says_so_in_one_line(qtbot, stdio_hub):
    [outcome] = _run(qtbot, stdio_hub, "hang", allowed=False)
    assert outcome.is_error and outcome.text.startswith("The user denied the call to hang")


def test_stop_ends_a_hung_call_and_the_server_answers_the_next(qtbot, stdio_hub):
    call = McpCall(stdio_hub, ToolCall("hang", "{}"))
    call.run(allowed=True)
    with qtbot.waitSignal(call.done, timeout=30_000) as done:
        call.stop()
    assert done.args == [ToolOutcome(stopped_line("hang"), is_error=True)] and call.stopped
    assert _run(qtbot, stdio_hub, "add", '{"a": 1, "b": 1}') == [ToolOutcome("2")]


def test_a_hanging_tool_times_out_with_one_line(qtbot, stdio_hub, monkeypatch):
    """On the module's server, its hub's timeout cut to half a second for this test (the hub reads it per call)."""
    monkeypatch.setattr(stdio_hub, "timeout", 0.5)
    assert _run(qtbot, stdio_hub, "hang") == [ToolOutcome("Tool hang timed out after 0.5 s.", is_error=True)]


def test_a_streamable_http_server_is_called(qtbot, http_server):  # noqa: F811 - the fixture
    hub = _hub(http_server)
    try:
        assert _run(qtbot, hub, "add", '{"a": 20, "b": 22}') == [ToolOutcome("42")]
    finally:
        hub.close()
