"""The attachment reader: files read off the GUI thread, in the order given, each result delivered on the GUI thread."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject

from app.attachment_reader import AttachmentReader


class Collector(QObject):
    """Receives the reader's signals (bound methods of a QObject on the GUI thread), noting the thread they ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []
        self.threads: set[threading.Thread] = set()

    def read(self, attachment) -> None:
        self.seen.append(("read", attachment.name))
        self.threads.add(threading.current_thread())

    def failed(self, message: str) -> None:
        self.seen.append(("failed", message.split(":")[0]))
        self.threads.add(threading.current_thread())


def test_files_are_read_in_order_and_reported_on_the_gui_thread(qtbot, tmp_path: Path) -> None:
    for name in ("a.txt", "c.md"):
        (tmp_path / name).write_text(f"text of {name}", encoding="utf-8")
    reader, collector = AttachmentReader(), Collector()
    reader.read.connect(collector.read)
    reader.failed.connect(collector.failed)
    with qtbot.waitSignal(reader.idle, timeout=30_000):
        reader.start([tmp_path / "a.txt", tmp_path / "missing.txt", tmp_path / "c.md"], lambda text: len(text.split()))
    assert collector.seen == [("read", "a.txt"), ("failed", "Cannot read missing.txt"), ("read", "c.md")]
    assert collector.threads == {threading.main_thread()} and reader.pending == 0


def test_finish_delivers_the_reads_under_way_at_once(qtbot, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("text", encoding="utf-8")
    reader, collector = AttachmentReader(), Collector()
    reader.read.connect(collector.read)
    reader.start([tmp_path / "a.txt"], None)
    reader.finish()  # no event loop ran: the result is delivered by finish itself
    assert collector.seen == [("read", "a.txt")]
