"""Reading attached files off the GUI thread: a 100-page PDF takes seconds to extract and count (a large photo to
decode and downscale), and the window must not freeze meanwhile.

One thread reads the files in the order given (a pool of one), and hands each result to the GUI thread through
queued signals. The reader's signals reach bound methods of QObjects living on the GUI thread only: PySide6 would
run a plain function or lambda in the emitting thread.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QCoreApplication, QObject, QRunnable, QThreadPool, Signal

from engine.attachments import CountTokens, read_attachment
from engine.chat_images import is_image_file, read_chat_image

from .readable_errors import readable_error


class _Results(QObject):
    """The signals a file read on the pool's thread is reported with."""

    read = Signal(object)
    failed = Signal(str)


class _ReadFile(QRunnable):
    def __init__(self, path: Path, count_tokens: CountTokens | None, results: _Results) -> None:
        super().__init__()
        self.path, self.count_tokens, self.results = path, count_tokens, results

    def run(self) -> None:
        try:
            attachment = read_chat_image(self.path) if is_image_file(self.path) else read_attachment(self.path, self.count_tokens)
        except BaseException as error:  # noqa: BLE001 - reported in the window, never raised into Qt
            self.results.failed.emit(readable_error(error))
        else:
            self.results.read.emit(attachment)


class AttachmentReader(QObject):
    """Reads files into Attachments (images into ChatImages) on a thread of its own, one at a time, in order.

    Signals (emitted on the GUI thread):
        read(Attachment): a file was read (and counted, when a tokenizer was given).
        failed(str): a file could not be read; the message says why and what to do.
        idle(): every file given so far is read (or failed).
    """

    read = Signal(object)
    failed = Signal(str)
    idle = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)  # in the order given, and one tokenizer call at a time
        self.pending = 0
        self.results = _Results()  # no parent: it lives as long as a read that may still emit on it
        self.results.read.connect(self._read)
        self.results.failed.connect(self._failed)

    def start(self, paths: list[Path], count_tokens: CountTokens | None) -> None:
        for path in paths:
            self.pending += 1
            self.pool.start(_ReadFile(path, count_tokens, self.results))

    def finish(self) -> None:
        """Wait for the files being read and deliver their results now (sending a message takes them all)."""
        self.pool.waitForDone()
        QCoreApplication.sendPostedEvents(self)

    def _read(self, attachment: object) -> None:
        self.read.emit(attachment)
        self._one_done()

    def _failed(self, message: str) -> None:
        self.failed.emit(message)
        self._one_done()

    def _one_done(self) -> None:
        self.pending -= 1
        if not self.pending:
            self.idle.emit()
