"""An MCP call driven from its card under pytest-qt, against the FastMCP demo server over stdio and HTTP."""

from __future__ import annotations

import sys

import pytest

from app.mcp_call import McpCall
from app.tool_call_card import ToolCallCard
from engine.mcp_tools.hub import McpHub, ToolOutcome
from engine.mcp_tools.servers_config import ServerConfig
from engine.mcp_tools.tool_turn import Permissions
from engine.serving.pieces import ToolCall
from tests.engine.mcp_tools.test_hub import DEMO, http_server  # noqa: F401 - the fixture, shared


def _hub(server: ServerConfig, timeout: float = 30.0) -> McpHub:
    hub = McpHub([server], timeout=timeout)
    hub.start()
    return hub


@pytest.fixture
def stdio_hub():
    hub = _hub(ServerConfig("demo", command=sys.executable, args=(DEMO,)))
    yield hub
    hub.close()


def _call(qtbot, hub, permissions, name, arguments="{}"):
    card = ToolCallCard(name, arguments, "demo")
    qtbot.addWidget(card)
    card.show()
    flow = McpCall(hub, permissions, ToolCall(name, arguments), card)
    flow.start()
    return card, flow


def test_allow_once_runs_the_call_and_folds_its_result(qtbot, stdio_hub):
    card, flow = _call(qtbot, stdio_hub, Permissions(), "add", '{"a": 2, "b": 40}')
    assert card.ask_row.isVisible()
    with qtbot.waitSignal(flow.done, timeout=30_000) as done:
        card.buttons["once"].click()
    assert done.args == [ToolOutcome("42")]
    assert card.toggle.isVisible() and not card.expanded and card.result.toPlainText() == "42"


def test_always_is_not_asked_again_in_the_chat(qtbot, stdio_hub):
    permissions = Permissions()
    card, flow = _call(qtbot, stdio_hub, permissions, "add", '{"a": 1, "b": 1}')
    with qtbot.waitSignal(flow.done, timeout=30_000):
        card.buttons["always"].click()
    again, flow = _call(qtbot, stdio_hub, permissions, "add", '{"a": 2, "b": 2}')
    with qtbot.waitSignal(flow.done, timeout=30_000) as done:
        pass
    assert done.args == [ToolOutcome("4")] and not again.ask_row.isVisible()


def test_deny_runs_nothing_and_says_so_in_one_line(qtbot, stdio_hub):
    card, flow = _call(qtbot, stdio_hub, Permissions(), "hang")
    with qtbot.waitSignal(flow.done, timeout=30_000) as done:
        card.buttons["deny"].click()
    assert done.args[0].is_error and card.status.text().startswith("The user denied the call to hang")


def test_a_hanging_tool_times_out_on_its_card_with_one_line(qtbot):
    hub = _hub(ServerConfig("demo", command=sys.executable, args=(DEMO,)), timeout=0.5)
    try:
        card, flow = _call(qtbot, hub, Permissions(always={"hang"}), "hang")
        with qtbot.waitSignal(flow.done, timeout=30_000):
            pass
        assert card.status.text() == "Tool hang timed out after 0.5 s." and not card.toggle.isVisible()
    finally:
        hub.close()


def test_a_streamable_http_server_is_called_from_the_card(qtbot, http_server):  # noqa: F811 - the fixture
    hub = _hub(http_server)
    try:
        card, flow = _call(qtbot, hub, Permissions(), "add", '{"a": 20, "b": 22}')
        with qtbot.waitSignal(flow.done, timeout=30_000) as done:
            card.buttons["once"].click()
        assert done.args == [ToolOutcome("42")]
    finally:
        hub.close()
