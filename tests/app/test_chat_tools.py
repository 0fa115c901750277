"""MCP tools in the chat, end to end under pytest-qt: the tiny tool pair (Qwen2.5's template) offered the demo
FastMCP server's tools, the answer with the call scripted (random weights never call a tool), the answer after
the result generated for real, with speculation.

The windows reach one demo server for the module over streamable HTTP: a server over stdio per window cost a
Python process importing the MCP SDK (1-2 CPU-seconds) in each test. The app's launching of stdio servers from
its mcp.json is test_mcp_servers.py's, and the hub's on either transport tests/engine/mcp_tools/test_hub.py's."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QLabel

from app.chat_tools import limit_line, unseen_tools_line
from app.tool_call_card import ToolCallCard
from engine.models.app_paths import data_dir
from tests.app.scripted_calls import ADD_CALL, HANG_CALL, ScriptedCalls
from tests.engine.mcp_tools.test_hub import demo_over_http


@pytest.fixture(scope="module")
def demo_url():
    with demo_over_http() as url:
        yield url


def offer_the_demo_server(url: str) -> None:
    """The demo server in the app-data folder's mcp.json, which the next window connects to."""
    (data_dir() / "mcp.json").write_text(json.dumps({"mcpServers": {"demo": {"url": url}}}))


@pytest.fixture
def tool_window(qtbot, make_window, tool_dirs, monkeypatch, demo_url):
    """`tool_window(reply, always=False)`: a window on the tool pair with the demo server in its mcp.json, connected."""

    def make(reply: str, always: bool = False):
        offer_the_demo_server(demo_url)
        script = ScriptedCalls(reply, always)
        monkeypatch.setattr("engine.decoding.generation.generate_stream", script)
        window = make_window((str(tool_dirs[0]), str(tool_dirs[1])), max_tokens=80)  # the whole call
        qtbot.waitUntil(lambda: window.session.tools.servers.hub is not None, timeout=60_000)
        return window, script

    return make


def ask(qtbot, window, text: str = "What is 2 + 40?") -> ToolCallCard:
    """Send a question whose scripted answer calls a tool; the call's card once it asks."""
    window.input.setPlainText(text)
    window.input.submitted.emit()
    qtbot.waitUntil(lambda: bool(_cards(window)) and not _cards(window)[0].ask_row.isHidden(), timeout=60_000)
    return _cards(window)[0]


def _cards(window) -> list[ToolCallCard]:
    return [card for message in window.chat.messages for card in message.findChildren(ToolCallCard)]


def test_an_allowed_call_shows_its_result_folded_and_the_answer_goes_on_measured(qtbot, tool_window):
    window, script = tool_window(ADD_CALL)
    card = ask(qtbot, window)
    assert window.session.busy and window.send_button.text() == "Stop"
    assert [tool["function"]["name"] for tool in script.requests[0]["tools"]] == ["add", "hang", "fail"]
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as finished:
        card.buttons["once"].click()
    assert card.result.toPlainText() == "42" and not card.toggle.isHidden() and not card.expanded
    after = script.requests[-1]["messages"]
    assert after[-2]["tool_calls"][0]["function"] == {"name": "add", "arguments": {"a": 2, "b": 40}}
    assert after[-1] == {"role": "tool", "tool_call_id": after[-2]["tool_calls"][0]["id"], "name": "add", "content": "42"}
    _answer, result, _summary = finished.args
    assert result.mode == "speculative" and result.stats.drafted > 0  # the answer after the result speculates
    assert window.stats.values["tps"].text() == f"{result.stats.generation_tps:.1f}"  # and is measured as any answer
    assert len(window.chat.messages) == 3 and not window.session.busy


def test_a_denied_call_runs_nothing_and_the_model_is_told(qtbot, tool_window):
    window, script = tool_window(ADD_CALL)
    card = ask(qtbot, window)
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        card.buttons["deny"].click()
    assert card.status.text().startswith("The user denied the call to add")
    assert script.requests[-1]["messages"][-1]["content"].startswith("The user denied the call to add")
    saved = window.session.store.messages(window.conversation_id)[1].tool_calls["calls"][0]
    assert saved["state"] == "denied"


def test_a_failed_call_is_saved_as_such_and_the_model_reads_its_error(qtbot, tool_window):
    window, script = tool_window(ADD_CALL.replace('"add", "arguments": {"a": 2, "b": 40}', '"fail", "arguments": {}'))
    card = ask(qtbot, window)
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        card.buttons["once"].click()
    saved = window.session.store.messages(window.conversation_id)[1].tool_calls["calls"][0]
    assert saved["state"] == "failed" and "backend down" in saved["result"] and "backend down" in card.status.text()
    assert script.requests[-1]["messages"][-1]["content"] == saved["result"]


def test_stop_ends_a_hung_call_and_the_answer_does_not_go_on(qtbot, tool_window):
    window, script = tool_window(HANG_CALL)
    card = ask(qtbot, window)
    card.buttons["once"].click()
    qtbot.waitUntil(lambda: card.status.text().startswith("Running…"), timeout=30_000)
    with qtbot.waitSignal(window.session.busy_changed, check_params_cb=lambda busy: not busy, timeout=30_000):
        window.send_button.click()
    assert card.status.text() == "Stopped: hang was stopped before it returned."
    assert len(window.chat.messages) == 2 and len(script.requests) == 1 and window.send_button.text() == "Send"
    assert window.session.store.messages(window.conversation_id)[1].tool_calls["calls"][0]["state"] == "stopped"


def test_calls_are_shown_again_when_the_chat_is_reopened(qtbot, tool_window):
    window, _script = tool_window(ADD_CALL)
    card = ask(qtbot, window)
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        card.buttons["once"].click()
    chat = window.conversation_id
    window.new_conversation()
    window.open_conversation(chat)
    cards = _cards(window)
    assert len(cards) == 1 and cards[0].result.toPlainText() == "42" and cards[0].ask_row.isHidden()
    assert window.chat.messages[1].text == "" and window.chat.messages[1].body.isHidden()  # the call is the card, not text
    assert len(window.chat.messages) == 3
    assert window.session.history(chat)[2] == {"role": "tool", "tool_call_id": window.session.history(chat)[1]["tool_calls"][0]["id"],
                                               "name": "add", "content": "42"}


def test_a_quit_mid_call_is_saved_and_reads_as_interrupted(qtbot, tool_window, make_window, tool_dirs):
    window, _script = tool_window(HANG_CALL)
    ask(qtbot, window).buttons["once"].click()
    qtbot.waitUntil(lambda: _cards(window)[0].status.text().startswith("Running…"), timeout=30_000)
    chat = window.conversation_id
    window.close()  # quits mid-call
    again = make_window((str(tool_dirs[0]), str(tool_dirs[1])))
    again.open_conversation(chat)
    interrupted = "Interrupted: SpecChat closed before hang returned."
    assert _cards(again)[0].status.text() == interrupted and again.session.history(chat)[-1]["content"] == interrupted


def test_a_model_that_keeps_calling_stops_at_the_round_limit_with_a_line(qtbot, tool_window, monkeypatch):
    monkeypatch.setattr("app.chat_tools.MAX_TOOL_ROUNDS", 2)
    window, script = tool_window(ADD_CALL, always=True)
    ask(qtbot, window).buttons["always"].click()
    qtbot.waitUntil(lambda: not window.session.busy and len(_cards(window)) == 3, timeout=60_000)
    assert _cards(window)[-1].status.text() == limit_line() and len(script.requests) == 3


def test_a_model_whose_template_shows_no_tools_is_offered_none(qtbot, make_window, tiny_dirs, monkeypatch, demo_url):
    offer_the_demo_server(demo_url)
    script = ScriptedCalls(ADD_CALL)
    monkeypatch.setattr("engine.decoding.generation.generate_stream", script)
    window = make_window(max_tokens=80)
    qtbot.waitUntil(lambda: window.session.tools.servers.hub is not None, timeout=60_000)
    assert not window.session.pair.calls_tools
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        window.input.setPlainText("What is 2 + 40?")
        window.input.submitted.emit()
    assert script.requests[0]["tools"] is None and _cards(window) == [] and not window.session.busy
    note = _tools_note(window)  # said over the box, in bold once a message went without them: never silently
    assert not note.isHidden() and note.text() == unseen_tools_line(window.session.pair, window.session.tools.servers.tools)
    assert "cannot show tools" in note.text() and "font-weight: bold" in note.styleSheet()


def test_a_model_that_shows_tools_gets_no_note_and_tools_off_lifts_it(qtbot, make_window, tiny_dirs, tool_window, demo_url):
    window, _script = tool_window(ADD_CALL)
    assert _tools_note(window).isHidden()
    offer_the_demo_server(demo_url)
    plain = make_window()
    qtbot.waitUntil(lambda: plain.session.tools.servers.hub is not None, timeout=60_000)
    assert not _tools_note(plain).isHidden() and "font-weight" not in _tools_note(plain).styleSheet()
    with qtbot.waitSignal(plain.session.tools.servers.changed, timeout=60_000):
        plain.session.tools.servers.configure(plain.session.tools.servers.path, on=False)
    assert _tools_note(plain).isHidden()


def _tools_note(window) -> QLabel:
    return window.findChild(QLabel, "unseenToolsNote")


def test_servers_that_cannot_start_are_said_over_the_box(qtbot, make_window, tool_dirs, demo_url) -> None:
    """A new user's two broken servers failed without a word in the window: only Settings said so."""
    (data_dir() / "mcp.json").write_text(json.dumps({"mcpServers": {"demo": {"url": demo_url}, "web": {"url": "http://127.0.0.1:9/mcp"}}}))
    window = make_window(pair=(str(tool_dirs[0]), ""))
    qtbot.waitUntil(lambda: window.session.tools.servers.hub is not None, timeout=60_000)
    note = _tools_note(window)
    assert not note.isHidden() and note.text() == "MCP tools: 1 of 2 servers could not start (web); Settings → MCP tools says why."
    (data_dir() / "broken.json").write_text("{nope")
    with qtbot.waitSignal(window.session.tools.servers.changed, timeout=60_000):
        window.session.tools.servers.configure(data_dir() / "broken.json", on=True)
    assert note.text().startswith("MCP tools: ") and "is not valid JSON" in note.text()
