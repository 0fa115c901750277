"""The status bar's progress for a long load (a GGUF import): a bar, the stage, and a Cancel button.

Importing a 7B GGUF takes minutes; the user sees how far it is and can stop it. Cancelling ends the import at
its next tensor and keeps nothing of it (the engine writes under a temporary name); the pair loaded before
stays in use.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QStatusBar, QWidget

from .session import ChatSession


class ImportProgress(QWidget):
    """Shown in the status bar while a load reports progress; hidden when the load ends either way."""

    def __init__(self, session: ChatSession, status_bar: QStatusBar) -> None:
        super().__init__()
        self.session = session
        self.label = QLabel()
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setFixedWidth(160)
        self.cancel_button = QPushButton("Cancel import")
        self.cancel_button.clicked.connect(self.cancel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in (self.label, self.bar, self.cancel_button):
            layout.addWidget(widget)
        status_bar.addPermanentWidget(self)
        self.hide()
        session.load_progress.connect(self.show_progress)
        for ended in (session.pair_loaded, session.pair_failed, session.load_cancelled):
            ended.connect(self.hide)

    def show_progress(self, stage: str, done: int, total: int) -> None:
        self.label.setText(stage)
        self.bar.setValue(1000 * done // max(total, 1))
        self.cancel_button.setEnabled(True)
        self.show()

    def cancel(self) -> None:
        self.cancel_button.setEnabled(False)
        self.label.setText("Cancelling the import…")
        self.session.cancel_load()
