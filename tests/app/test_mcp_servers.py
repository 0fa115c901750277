"""The MCP servers of the chat: the file and switch remembered, a line per server, connected off the GUI thread."""

from __future__ import annotations

import json
import sys

from app.mcp_servers import TOOLS_OFF, McpServers
from app.settings import AppSettings
from engine.models.app_paths import data_dir
from tests.engine.mcp_tools.test_hub import DEMO


def _write(path, servers: dict) -> None:
    path.write_text(json.dumps({"mcpServers": servers}))


def test_the_app_data_folders_file_connects_off_the_gui_thread_with_a_line_per_server(qtbot, isolated_home):
    _write(data_dir() / "mcp.json", {"demo": {"command": sys.executable, "args": [DEMO]},
                                     "gone": {"command": "/no/such/server"}})
    servers = McpServers(AppSettings())
    try:
        assert servers.lines() == ["demo (stdio): connecting…", "gone (stdio): connecting…"]
        qtbot.waitUntil(lambda: servers.hub is not None, timeout=60_000)
        demo, gone = servers.lines()
        assert demo == "demo (stdio): 3 tools (add, hang, fail)"
        assert gone.startswith("gone (stdio): could not start: ")  # the server named once
        assert [tool.name for tool in servers.tools] == ["add", "hang", "fail"]
    finally:
        servers.close()


def test_a_broken_file_is_named_and_off_offers_nothing_both_remembered(qtbot, isolated_home):
    broken = isolated_home / "mine.json"
    broken.write_text("{nope")
    servers = McpServers(AppSettings())
    assert servers.lines() == [f"No servers: {data_dir() / 'mcp.json'} does not exist or lists none."]
    servers.configure(broken, True)
    assert servers.lines()[0].startswith(f"{broken} is not valid JSON") and servers.tools == []
    servers.configure(broken, False)
    again = McpServers(AppSettings())
    assert (again.path, again.on, again.lines()) == (broken, False, [TOOLS_OFF])


def test_a_folder_saved_as_the_file_lets_the_app_start_and_says_what_to_choose(qtbot, isolated_home, tmp_path):
    """A folder typed into Settings was saved and crashed every later launch in this constructor."""
    AppSettings().save_mcp(str(tmp_path), True)
    servers = McpServers(AppSettings())
    try:
        assert servers.lines() == [f"{tmp_path} is a folder: choose the mcp.json file inside it"] and servers.tools == []
    finally:
        servers.close()
