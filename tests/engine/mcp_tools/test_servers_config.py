import json

import pytest

from engine.mcp_tools.servers_config import McpConfigError, ServerConfig, load_servers, parse_servers


def test_reads_the_claude_desktop_format_with_stdio_and_http_servers(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "web": {"url": "http://127.0.0.1:9000/mcp", "headers": {"Authorization": "Bearer x"}},
    }}))
    time, web = load_servers(path)
    assert time == ServerConfig("time", command="uvx", args=("mcp-server-time",), env={"TZ": "UTC"})
    assert time.transport == "stdio"
    assert web.url == "http://127.0.0.1:9000/mcp" and web.headers == {"Authorization": "Bearer x"}
    assert web.transport == "http"


def test_a_missing_file_means_no_servers(tmp_path):
    assert load_servers(tmp_path / "mcp.json") == []


def test_a_folder_given_as_the_file_is_named_with_its_fix(tmp_path):
    """It raised IsADirectoryError, which crashed the app at every launch (the path is saved)."""
    with pytest.raises(McpConfigError, match=f"^{tmp_path} is a folder: choose the mcp.json file inside it$"):
        load_servers(tmp_path)


def test_broken_json_names_the_file(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text("{nope")
    with pytest.raises(McpConfigError, match="mcp.json is not valid JSON"):
        load_servers(path)


@pytest.mark.parametrize(("entry", "message"), [
    ({}, 'server "s" needs exactly one of "command"'),
    ({"command": "x", "url": "http://h"}, "needs exactly one of"),
    ({"url": "ftp://h"}, "must start with http://"),
    ({"command": "x", "args": "--flag"}, '"args" must be a list of strings'),
    ({"command": "x", "env": {"A": 1}}, '"env" must map names to strings'),
    ("uvx", "must be an object"),
])
def test_a_bad_entry_is_named_with_its_fix(entry, message):
    with pytest.raises(McpConfigError, match=message):
        parse_servers({"mcpServers": {"s": entry}})


def test_the_top_level_must_hold_mcp_servers():
    with pytest.raises(McpConfigError, match='"mcpServers" object'):
        parse_servers([1, 2])
