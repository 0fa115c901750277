"""The `mcp.json` file that names the MCP servers whose tools the chat offers.

The format is the one Claude Desktop, Cursor and LM Studio read, so a user copies their file over unchanged:
`{"mcpServers": {"name": {"command": ..., "args": [...], "env": {...}}}}` for a server launched over stdio,
`{"mcpServers": {"name": {"url": "http://.../mcp", "headers": {...}}}}` for one reached over streamable HTTP.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class McpConfigError(ValueError):
    """The mcp.json file cannot be used; the message names the entry and the fix."""


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server: launched as `command args` over stdio, or reached at `url` over streamable HTTP."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"


def load_servers(path: Path) -> list[ServerConfig]:
    """Reads mcp.json; a missing file means no servers, a malformed or unreadable one raises McpConfigError (a folder
    given as the file crashed the app at every launch, the path being saved)."""
    if not path.exists():
        return []
    if path.is_dir():
        raise McpConfigError(f"{path} is a folder: choose the mcp.json file inside it")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise McpConfigError(f"{path} is not valid JSON ({error}); fix or remove the file") from error
    except OSError as error:
        raise McpConfigError(f"{path} cannot be read ({error.strerror}); choose another file") from error
    return parse_servers(data, str(path))


def parse_servers(data: Any, source: str = "mcp.json") -> list[ServerConfig]:
    """The servers under "mcpServers", each checked so a typo is reported by name, not met as a traceback."""
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise McpConfigError(f'{source} must be an object with an "mcpServers" object inside')
    entries: dict[str, Any] = data.get("mcpServers", {})
    return [_server(name, entry, source) for name, entry in entries.items()]


def _server(name: str, entry: Any, source: str) -> ServerConfig:
    where = f'{source}: server "{name}"'
    if not isinstance(entry, dict):
        raise McpConfigError(f"{where} must be an object with a command or a url")
    command, url = entry.get("command"), entry.get("url")
    if bool(command) == bool(url):
        raise McpConfigError(f'{where} needs exactly one of "command" (stdio) or "url" (streamable HTTP)')
    if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        raise McpConfigError(f'{where}: "url" must start with http:// or https://, got {url!r}')
    if command is not None and not isinstance(command, str):
        raise McpConfigError(f'{where}: "command" must be a string such as "uvx"')
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise McpConfigError(f'{where}: "args" must be a list of strings')
    return ServerConfig(
        name=name, command=command, args=tuple(args), env=_strings(entry, "env", where), url=url,
        headers=_strings(entry, "headers", where),
    )


def _strings(entry: dict[str, Any], key: str, where: str) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f'{where}: "{key}" must map names to strings')
    return dict(value)
