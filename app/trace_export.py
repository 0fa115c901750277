"""Exporting an answer's speculation trace: its rounds as JSON Lines, in a file the user chooses."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QWidget

from engine.conversations import ConversationStore

from .file_dialogs import save_file


def save_trace(parent: QWidget, store: ConversationStore, message_id: int, path: str | None = None) -> tuple[str, str]:
    """Write an answer's trace (asking where, unless given a path): (the file written, "" if the user cancelled;
    what went wrong and what to do, "" if nothing did)."""
    if path is None:
        path = save_file(parent, "exports", "Export the speculation trace", "trace.jsonl", "JSON Lines (*.jsonl)")
    if not path:
        return "", ""
    try:
        Path(path).write_text(store.export_trace(message_id), encoding="utf-8")
    except OSError as error:
        return "", f"Could not write the trace to {path}: {error.strerror}. Choose another folder."
    return path, ""
