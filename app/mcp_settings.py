"""The MCP section of Settings: whether answers are offered MCP tools, the mcp.json that names the servers, and a
line per server saying where it stands (its tools, or why it has none).

The file is the one Claude Desktop and LM Studio read, so the chooser opens in the user's home, where theirs are
(~/Library/Application Support/Claude, ~/.lmstudio). A file chosen but not applied yet is read at once, so a
mistake in it shows here before OK; its servers connect once the dialog is accepted.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QCheckBox, QDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from engine.mcp_tools.servers_config import McpConfigError, load_servers

from .file_dialogs import open_file
from .mcp_servers import TOOLS_OFF, McpServers
from .quiet_text import make_quiet


def preview_lines(path: Path) -> list[str]:
    """The servers a file not in use yet names, or what is wrong with it."""
    try:
        servers = load_servers(path)
    except McpConfigError as error:
        return [str(error)]
    if not servers:
        return [f"No servers: {path} does not exist or lists none."]
    return [f"{server.name} ({server.transport}): connects when you press OK" for server in servers]


class McpSettings(QWidget):
    """The switch, the file with its chooser, and the servers' lines, in rows of the dialog's form; applied when the
    dialog is accepted.

    Attributes:
        switch: tools on or off; path: the mcp.json; choose: its file chooser; servers_label: a line per server.
    """

    def __init__(self, servers: McpServers, dialog: QDialog, form: QFormLayout) -> None:
        super().__init__(dialog)
        self.servers = servers
        self.switch = QCheckBox("Offer the tools of MCP servers to the model (it asks before each call)")
        self.switch.setChecked(servers.on)
        self.path = QLineEdit(str(servers.path))
        self.path.setPlaceholderText("mcp.json, as Claude Desktop and LM Studio write it")
        self.choose = QPushButton("Choose…")
        self.choose.clicked.connect(self._choose)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.path, 1)
        row.addWidget(self.choose)
        self.servers_label = QLabel()
        self.servers_label.setObjectName("mcpServers")
        self.servers_label.setWordWrap(True)
        make_quiet(self.servers_label, "font-size: 11px;")
        for signal in (self.switch.toggled, self.path.textChanged, servers.changed):
            signal.connect(self._show_lines)
        self._show_lines()
        dialog.accepted.connect(self.apply)
        form.addRow("MCP tools", self.switch)
        form.addRow("", self)
        form.addRow("", self.servers_label)

    def chosen(self) -> tuple[Path, bool]:
        return Path(self.path.text().strip()).expanduser(), self.switch.isChecked()

    def apply(self) -> None:
        self.servers.configure(*self.chosen())

    def _show_lines(self, *_: object) -> None:
        path, on = self.chosen()
        if not on:
            lines = [TOOLS_OFF]
        elif (path, on) == (self.servers.path, self.servers.on):
            lines = self.servers.lines()
        else:
            lines = preview_lines(path)
        self.servers_label.setText("\n".join(lines))
        self.path.setEnabled(on)
        self.choose.setEnabled(on)

    def _choose(self) -> None:
        path = open_file(self, "settings files", "The MCP servers' file (mcp.json)", "MCP servers (*.json)")
        if path:
            self.path.setText(path)
