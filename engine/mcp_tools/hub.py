"""Connections to the configured MCP servers, kept open on a thread of their own.

The MCP SDK is asyncio; the app's GUI thread runs Qt's loop and the engine worker's thread runs MLX, so neither may
host it. The hub owns one event loop on a daemon thread: each server lives in one task there (the SDK's cancel
scopes must be entered and left by the same task), and callers on any other thread block on `call` until the
result, a server's error, or the timeout comes back as a ToolOutcome; nothing here raises into the chat.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO, cast

import anyio

from engine.mcp_tools.servers_config import ServerConfig

if TYPE_CHECKING:
    from mcp import Client

CONNECT_SECONDS = 30.0


@dataclass(frozen=True)
class ToolOutcome:
    """What a call gave back: the text the model reads next, and whether it is an error or a timeout."""

    text: str
    is_error: bool = False


@dataclass(frozen=True)
class McpTool:
    """One tool a server offers, with the server that runs it."""

    server: str
    name: str
    description: str
    parameters: dict[str, Any]

    def as_template_tool(self) -> dict[str, Any]:
        """The OpenAI function shape the chat templates and the tool-call parser already take."""
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


class McpHub:
    """The open servers: their tools to offer, and `call` to run one with a timeout."""

    def __init__(self, servers: list[ServerConfig], timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._servers = servers
        self._clients: dict[str, Client] = {}
        self._tools: dict[str, McpTool] = {}
        self._listed: dict[str, list[Any]] = {}
        self.errors: dict[str, str] = {}
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-hub", daemon=True)
        self._thread.start()

    def start(self) -> None:
        """Connects every server and lists its tools; a server that fails is named in `errors`, the rest work."""
        self._run(self._start_all(), CONNECT_SECONDS * max(1, len(self._servers)))

    @property
    def tools(self) -> list[McpTool]:
        return list(self._tools.values())

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Runs one tool; a hang past `timeout` seconds comes back as a one-line error outcome, not a freeze."""
        return self.submit(name, arguments).result(self.timeout + CONNECT_SECONDS)

    def submit(self, name: str, arguments: dict[str, Any]) -> Future[ToolOutcome]:
        """Starts one tool and returns at once: the future's result is the outcome (as `call`'s), and cancelling it
        stops the call on the hub's loop (the user's Stop), leaving the server connected."""
        tool = self._tools.get(name)
        if tool is None:
            unknown: Future[ToolOutcome] = Future()
            unknown.set_result(ToolOutcome(f"No MCP server offers a tool named {name!r}.", is_error=True))
            return unknown
        return asyncio.run_coroutine_threadsafe(self._call(tool, arguments), self._loop)

    def server_of(self, name: str) -> str:
        """The server that offers a tool ("" for none)."""
        tool = self._tools.get(name)
        return tool.server if tool else ""

    def close(self) -> None:
        """Closes every connection (stdio servers exit) and stops the hub's thread."""
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._run(self._drain(), CONNECT_SECONDS)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()

    def _run(self, coroutine: Coroutine[Any, Any, Any], limit: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(limit)

    async def _start_all(self) -> None:
        self._stop = asyncio.Event()
        ready = [asyncio.Event() for _ in self._servers]
        self._tasks = [asyncio.create_task(self._hold(server, flag)) for server, flag in zip(self._servers, ready)]
        for flag in ready:
            await flag.wait()
        for server in self._servers:  # in the file's order, whichever connected first
            self._offer(server.name, self._listed.get(server.name, []))

    async def _hold(self, server: ServerConfig, ready: asyncio.Event) -> None:
        """Keeps one server's connection open until close(); any failure is recorded against its name."""
        assert self._stop is not None
        try:
            async with _client(server) as client:
                self._listed[server.name] = (await client.list_tools()).tools
                self._clients[server.name] = client
                ready.set()
                await self._stop.wait()
        except Exception as error:  # noqa: BLE001 - a broken server is reported by name; the other servers work on
            self.errors[server.name] = start_failure(server, error)
        finally:
            ready.set()

    def _offer(self, server: str, tools: list[Any]) -> None:
        """The server's tools, but for a name a server before it in mcp.json offers already: the model calls tools
        by name alone, so the earlier server keeps it and the clash is reported against the later one."""
        clashes = [f"{tool.name} ({self._tools[tool.name].server})" for tool in tools if tool.name in self._tools]
        for tool in tools:
            if tool.name not in self._tools:
                parameters = tool.input_schema or {"type": "object", "properties": {}}
                self._tools[tool.name] = McpTool(server, tool.name, tool.description or "", parameters)
        if clashes:
            self.errors[server] = f"MCP server {server!r}: left out tools another server offers already: {', '.join(clashes)}"

    async def _call(self, tool: McpTool, arguments: dict[str, Any]) -> ToolOutcome:
        client = self._clients[tool.server]
        try:
            with anyio.fail_after(self.timeout):
                result = await client.call_tool(tool.name, arguments)
        except TimeoutError:
            return ToolOutcome(f"Tool {tool.name} timed out after {self.timeout:g} s.", is_error=True)
        except Exception as error:  # noqa: BLE001 - the model reads the failure and the chat goes on
            return ToolOutcome(f"Tool {tool.name} failed: {_reason(error)}", is_error=True)
        return ToolOutcome(_result_text(result), is_error=bool(result.is_error))

    async def _drain(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _client(server: ServerConfig) -> Client:
    """The SDK's client for one server. The SDK is imported here, when a hub first connects: imported with the
    module it cost every launch of the app about 1.2 s of CPU (a quarter of importing the main window), and every
    test worker as much, whether or not a tool server was ever used.

    A stdio server's log goes to the process's own stderr (`sys.__stderr__`), named here: the SDK's default is
    whatever `sys.stderr` was when its module was first imported, and where that was a stand-in (pytest's capture of
    one test, gone after it) every later server failed to start."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    if server.url is None:
        assert server.command is not None
        parameters = StdioServerParameters(command=server.command, args=list(server.args), env=server.env or None)
        log = cast(TextIO, sys.__stderr__)  # None in an app without a console: the server then inherits the app's
        return Client(stdio_client(parameters, errlog=log))
    if server.headers:
        return Client(streamable_http_client(server.url, http_client=create_mcp_http_client(headers=server.headers)))
    return Client(server.url)


def _result_text(result: Any) -> str:
    """The result as the model reads it: text parts joined, other parts (images, resources) as their JSON."""
    parts = [part.text if getattr(part, "type", "") == "text" else json.dumps(part.model_dump(mode="json")) for part in result.content]
    if not parts and result.structured_content is not None:
        parts = [json.dumps(result.structured_content)]
    return "\n".join(parts)


def _innermost(error: BaseException) -> BaseException:
    """The first exception inside an exception group, which is where anyio puts the real cause."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _reason(error: BaseException) -> str:
    error = _innermost(error)
    return str(error) or type(error).__name__


def start_failure(server: ServerConfig, error: BaseException) -> str:
    """Why a server could not start, and what to try: the SDK's own words ("Connection closed", "All connection
    attempts failed") name neither the command nor the address, and a new user could do nothing with them."""
    cause, fix = _innermost(error), ""
    if server.url is not None:
        if type(cause).__name__ == "ConnectError":  # the SDK's HTTP client's (httpx2 in mcp 2): known by name, not imported
            fix = f"nothing answers at {server.url}: start the server, or correct its url in mcp.json"
    elif isinstance(cause, FileNotFoundError):
        fix = f"there is no program {server.command!r}: give its full path in mcp.json, or install it"
    elif _reason(cause) == "Connection closed":
        fix = f"its command exited before it answered: run {shlex.join([server.command or '', *server.args])} in a terminal to see why"
    return f"MCP server {server.name!r} ({server.transport}) could not start: {_reason(cause)}" + (f"; {fix}." if fix else "")
