"""The Local server window: the switch, the port, the address to give clients, and a log of requests."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from .local_server import DEFAULT_PORT, LocalServer

LOG_LINES = 500


class ServerDialog(QDialog):
    """Serve the loaded pair to other programs on this machine (editors, scripts, agents)."""

    def __init__(self, server: LocalServer, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Local server")
        self.resize(640, 380)
        self.server = server
        self.switch = QPushButton("Serve")
        self.switch.setCheckable(True)
        self.switch.setToolTip("Serve the loaded models on an OpenAI-compatible endpoint on this machine")
        self.port = QSpinBox()
        self.port.setRange(1024, 65535)
        self.port.setValue(server.session.settings.server_port(DEFAULT_PORT))  # the last one served on: 8080 may be taken
        self.address = QLabel()
        self.address.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(LOG_LINES)
        self.log.setPlaceholderText("Requests appear here.")
        self._lay_out()
        self.switch.toggled.connect(self._switched)
        server.state_changed.connect(self._show_state)
        server.logged.connect(self.log.appendPlainText)
        server.failed.connect(self._failed)
        self._show_state(server.address)

    def present(self) -> None:
        """Show the window in front (it may be open behind the main window)."""
        self.show()
        self.raise_()

    def _lay_out(self) -> None:
        row = QHBoxLayout()
        row.addWidget(self.switch)
        row.addWidget(QLabel("Port"))
        row.addWidget(self.port)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.address)
        layout.addWidget(self.log, 1)

    def _switched(self, on: bool) -> None:
        if on:
            self.server.start(self.port.value())
        else:
            self.server.stop()

    def _show_state(self, address: str) -> None:
        self.switch.blockSignals(True)
        self.switch.setChecked(bool(address))
        self.switch.setText("Stop serving" if address else "Serve")
        self.switch.blockSignals(False)
        self.port.setEnabled(not address)
        if address:
            self.server.session.settings.save_server_port(self.port.value())
            self.address.setText(
                f"Serving on <b>{address}</b>: point an OpenAI client there (any API key).<br>"
                f"<code>curl {address}/chat/completions -d '{{\"messages\": [{{\"role\": \"user\", \"content\": \"Hi\"}}]}}'</code>"
            )
        else:
            self.address.setText("Off. Requests start from the window's settings; each reports what speculation did.")

    def _failed(self, message: str) -> None:
        self._show_state("")
        self.address.setText(f"<span style='color:#c0392b'>{message}</span>")
