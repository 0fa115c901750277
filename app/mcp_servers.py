"""The MCP servers the chat offers tools from: where their mcp.json is, whether tools are on, and the hub that
keeps them connected.

Settings keep the file's path (by default `mcp.json` in the app-data folder, where a user copies Claude Desktop's
or LM Studio's) and the on/off switch. Connecting starts stdio servers and may wait on slow ones, so the hub starts
on a thread of its own; until it is ready the chat offers no tools, and each server's line says where it stands.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from engine.mcp_tools.hub import McpHub, McpTool
from engine.mcp_tools.servers_config import McpConfigError, ServerConfig, load_servers
from engine.models.app_paths import data_dir

from .settings import AppSettings

TOOLS_OFF = "Tools are off: answers are not offered the servers' tools."


class McpServers(QObject):
    """The configured servers and their hub.

    Signals:
        changed(): the servers' states changed (connected, failed, stopped): `lines()` reads differently.

    Attributes:
        path: the mcp.json in use; on: whether the chat offers their tools.
        error: what is wrong with the file ("" when nothing is).
    """

    changed = Signal()
    _started = Signal(object)

    def __init__(self, settings: AppSettings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._settings = settings
        path, self.on = settings.mcp()
        self.path = Path(path or data_dir() / "mcp.json")
        self.error = ""
        self.servers: list[ServerConfig] = []
        self.hub: McpHub | None = None
        self._pending: McpHub | None = None  # the hub connecting on its thread
        self._lock = threading.Lock()
        self._started.connect(self._on_started)
        self.start()

    @property
    def tools(self) -> list[McpTool]:
        """The tools of the connected servers (none while off or connecting)."""
        return self.hub.tools if self.hub is not None and self.on else []

    def configure(self, path: Path, on: bool) -> None:
        """Use another file or switch tools on or off (remembered); the servers are connected again."""
        self._settings.save_mcp(str(path), on)
        if (path, on) != (self.path, self.on):
            self.path, self.on = path, on
            self.close()
            self.start()

    def start(self) -> None:
        """Read the file and connect its servers on a thread; a broken file is named in `error`."""
        self.error, self.servers = "", []
        if self.on:
            try:
                self.servers = load_servers(self.path)
            except McpConfigError as error:
                self.error = str(error)
        if self.servers:
            hub = self._pending = McpHub(self.servers)
            threading.Thread(target=self._connect, args=(hub,), name="mcp-start", daemon=True).start()
        self.changed.emit()

    def lines(self) -> list[str]:
        """One line per server: its tools, or why it has none; the file's own problem first."""
        if not self.on:
            return [TOOLS_OFF]
        if self.error:
            return [self.error]
        if not self.servers:
            return [f"No servers: {self.path} does not exist or lists none."]
        return [self._line(server) for server in self.servers]

    def failure_line(self) -> str:
        """The line over the message box when servers could not start or the file is broken (a new user found out
        only by reopening Settings); "" when all is well, or tools are off."""
        if not self.on:
            return ""
        if self.error:
            return f"MCP tools: {self.error}."
        failed = [server.name for server in self.servers if self.hub is not None and server.name in self.hub.errors]
        if not failed:
            return ""
        which = f"{len(failed)} of {len(self.servers)} servers" if len(self.servers) > 1 else "the server"
        return f"MCP tools: {which} could not start ({', '.join(failed)}); Settings → MCP tools says why."

    def _line(self, server: ServerConfig) -> str:
        where = f"{server.name} ({server.transport})"
        if self.hub is None:
            return f"{where}: connecting…"
        if server.name in self.hub.errors:  # the server named once: "notes (http): could not start: ..."
            named = f"MCP server {server.name!r} ({server.transport}) "
            return f"{where}: {self.hub.errors[server.name].removeprefix(named)}"
        names = [tool.name for tool in self.hub.tools if tool.server == server.name]
        return f"{where}: {len(names)} tool{'s' if len(names) != 1 else ''} ({', '.join(names)})"

    def _connect(self, hub: McpHub) -> None:
        """On the starting thread: connect, then hand the hub over, unless it was let go meanwhile (closed or
        reconfigured: then this thread closes it, and never signals an object that may be gone)."""
        hub.start()
        with self._lock:
            if hub is self._pending:
                self._started.emit(hub)
                return
        hub.close()

    def _on_started(self, hub: McpHub) -> None:
        with self._lock:
            current = hub is self._pending
            if current:
                self.hub, self._pending = hub, None
        if current:
            self.changed.emit()
        else:
            hub.close()  # let go between the hand-over and now

    def close(self) -> None:
        """Disconnect every server (stdio servers exit); a hub still connecting closes once it is up."""
        with self._lock:
            self._pending = None
            hub, self.hub = self.hub, None
        if hub is not None:
            hub.close()
