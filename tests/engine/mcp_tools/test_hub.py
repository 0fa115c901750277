import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path

import pytest

from engine.mcp_tools.hub import McpHub, ToolOutcome
from engine.mcp_tools.servers_config import ServerConfig

DEMO = str(Path(__file__).with_name("demo_server.py"))


def _stdio() -> ServerConfig:
    return ServerConfig("demo", command=sys.executable, args=(DEMO,))


@contextmanager
def demo_over_http() -> Iterator[str]:
    """The demo server over streamable HTTP on a free port, its URL once uvicorn says it listens (its log, read
    line by line: probing the port in a loop kept a core busy while the server started). Killed at the end: a
    call to `hang` leaves a thread in it that never returns."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, DEMO, "http", str(port)], stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stderr:  # a server that dies ends the log, and the test fails on its first call
            if "Uvicorn running on" in line:
                break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()
        process.stderr.close()


@pytest.fixture
def http_server():
    with demo_over_http() as url:
        yield ServerConfig("web", url=url)


@pytest.fixture
def hub_of():
    hubs = []

    def make(*servers, timeout=30.0):
        hub = McpHub(list(servers), timeout=timeout)
        hubs.append(hub)
        hub.start()
        return hub

    yield make
    for hub in hubs:
        hub.close()


@pytest.fixture(scope="module")
def hub():
    """One hub for the module's stdio tests: a server that cannot start, the demo server, and a twin of it whose
    tools clash. A hub per test started six server processes (a second or two of CPU each, most of it importing
    mcp); this one starts two, and each test still reads its own part of the same start."""
    hub = McpHub([ServerConfig("broken", command="/nonexistent/mcp-server"), _stdio(),
                  ServerConfig("twin", command=sys.executable, args=(DEMO,))], timeout=30.0)
    hub.start()
    yield hub
    hub.close()


def test_a_stdio_server_lists_its_tools_in_the_template_shape_and_runs_them(hub):
    assert [tool.name for tool in hub.tools] == ["add", "hang", "fail"]
    add = hub.tools[0].as_template_tool()
    assert add["function"]["name"] == "add" and set(add["function"]["parameters"]["properties"]) == {"a", "b"}
    assert hub.call("add", {"a": 2, "b": 40}) == ToolOutcome("42")


def test_a_streamable_http_server_runs_the_same_tools(hub_of, http_server):
    hub = hub_of(http_server)
    assert hub.errors == {}
    assert hub.call("add", {"a": 1, "b": 1}) == ToolOutcome("2")


def test_a_tool_that_hangs_times_out_with_one_line_and_the_server_keeps_serving(hub):
    hub.timeout = 0.5
    try:
        outcome = hub.call("hang", {})
    finally:
        hub.timeout = 30.0  # the next call checks the server still serves, not how fast: on loaded cores it takes longer
    assert outcome == ToolOutcome("Tool hang timed out after 0.5 s.", is_error=True)
    assert hub.call("add", {"a": 3, "b": 4}) == ToolOutcome("7")


def test_a_failing_tool_and_an_unknown_tool_come_back_as_errors_for_the_model(hub):
    failed = hub.call("fail", {})
    assert failed.is_error and "backend down" in failed.text
    assert hub.call("nope", {}) == ToolOutcome("No MCP server offers a tool named 'nope'.", is_error=True)


def test_a_server_that_cannot_start_is_named_and_the_others_work(hub):
    assert set(hub.errors) == {"broken", "twin"} and "'broken' (stdio) could not start" in hub.errors["broken"]
    assert hub.call("add", {"a": 1, "b": 2}) == ToolOutcome("3")


def test_a_tool_name_two_servers_offer_stays_with_the_first_and_the_clash_is_named(hub):
    assert [tool.server for tool in hub.tools] == ["demo"] * 3
    assert hub.errors["twin"].endswith("left out tools another server offers already: add (demo), hang (demo), fail (demo)")


def test_no_servers_start_and_close_at_once(hub_of):
    assert hub_of().tools == []


@pytest.mark.skipif(find_spec("mcp_server_time") is None, reason="mcp-server-time (PyPI) is not installed: pip install mcp-server-time")
def test_the_published_mcp_server_time_from_pypi(hub_of):
    hub = hub_of(ServerConfig("time", command=sys.executable, args=("-m", "mcp_server_time", "--local-timezone", "UTC")))
    assert "get_current_time" in [tool.name for tool in hub.tools]
    outcome = hub.call("get_current_time", {"timezone": "UTC"})
    assert not outcome.is_error and '"timezone": "UTC"' in outcome.text


def test_a_stdio_server_starts_whatever_stderr_the_sdk_saw_when_first_imported(monkeypatch):
    """The SDK binds its stdio log to the `sys.stderr` of its first import: where that was a stand-in (pytest's
    capture of one test, gone after it) every later stdio server failed to start, in whichever test worker imported
    it so (two fresh-clone runs of the suite). A default bound to a stream with no file behind it stands for that."""
    import io

    import mcp.client.stdio

    monkeypatch.setattr(mcp.client.stdio.stdio_client.__wrapped__, "__defaults__", (io.StringIO(),))
    hub = McpHub([_stdio()], timeout=30.0)
    try:
        hub.start()
        assert hub.errors == {} and hub.call("add", {"a": 2, "b": 3}) == ToolOutcome("5")
    finally:
        hub.close()


def test_a_server_that_cannot_start_is_told_with_what_to_try() -> None:
    """The SDK said "Connection closed" of a command that exits and "All connection attempts failed" of an address
    where nothing listens: a new user could do nothing with either."""
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    hub = McpHub([ServerConfig("quits", command=sys.executable, args=("-c", "raise SystemExit(3)")),
                  ServerConfig("web", url=f"http://127.0.0.1:{port}/mcp"), ServerConfig("missing", command="/nonexistent/mcp-server")])
    try:
        hub.start()
    finally:
        hub.close()
    assert hub.errors["quits"].endswith(f"its command exited before it answered: run {shlex.quote(sys.executable)} -c 'raise SystemExit(3)' "
                                        "in a terminal to see why.")
    assert hub.errors["web"].endswith(f"nothing answers at http://127.0.0.1:{port}/mcp: start the server, or correct its url in mcp.json.")
    assert hub.errors["missing"].endswith("there is no program '/nonexistent/mcp-server': give its full path in mcp.json, or install it.")
