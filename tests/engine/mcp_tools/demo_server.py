"""A FastMCP server (MCPServer in mcp 2) the tests launch over stdio, or over streamable HTTP with `http PORT`."""

import sys
import threading

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("demo")


@server.tool()
def add(a: int, b: int) -> str:
    """Adds two integers."""
    return str(a + b)


@server.tool()
def hang() -> str:
    """Never answers: stands for a tool whose backend hung."""
    threading.Event().wait()
    return "unreachable"


@server.tool()
def fail() -> str:
    """Raises, as a tool whose backend is down does."""
    raise ToolError("backend down")


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
