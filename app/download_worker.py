"""Downloads on their own thread, so the user can keep chatting while a model arrives.

No MLX work happens here (that belongs to the engine worker); only network and file I/O.
"""

from __future__ import annotations

import socket
import ssl
import threading
import urllib.error
import urllib.request

from PySide6.QtCore import QObject, Signal, Slot

from engine.errors import DownloadCancelled
from engine.models.app_paths import hub_endpoint

from .readable_errors import readable_error

HUB_CHECK_TIMEOUT_S = 3.0


def why_unreachable(error: BaseException) -> str:
    """A network failure in plain words (not "[Errno -2] Name or service not known")."""
    reason = getattr(error, "reason", error)
    if isinstance(reason, socket.gaierror):
        return "its address could not be looked up (no internet connection, or name lookup is not working)"
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return f"it did not answer within {HUB_CHECK_TIMEOUT_S:.0f} seconds"
    if isinstance(reason, ConnectionRefusedError):
        return "the connection was refused (a firewall or proxy may block it)"
    if isinstance(reason, ssl.SSLError):
        return "the secure connection failed (a proxy may be intercepting it, or the clock is wrong)"
    return "the network connection failed"


class DownloadWorker(QObject):
    """Downloads models one after another.

    Signals:
        download_progress(DownloadProgress): bytes, speed and time left, about ten times a second.
        download_finished(str, str): a repo id and its local folder.
        download_errored(str, str): a repo id and a readable message.
        download_cancelled(str): a repo id whose download was cancelled (it resumes next time).
        hub_check_finished(bool, str): whether the hub answered, and a message for the user if not.
    """

    download_progress = Signal(object)
    download_finished = Signal(str, str)
    download_errored = Signal(str, str)
    download_cancelled = Signal(str)
    hub_check_finished = Signal(bool, str)

    def __init__(self) -> None:
        super().__init__()
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop the running download within a second (thread-safe)."""
        self._cancel.set()

    @Slot(list)
    def download(self, repo_ids: list[str]) -> None:
        from engine.models.downloads import download_model

        self._cancel.clear()
        for repo_id in repo_ids:
            try:
                path = download_model(repo_id, progress=self.download_progress.emit, cancel=self._cancel.is_set)
            except DownloadCancelled:
                self.download_cancelled.emit(repo_id)
                return
            except BaseException as error:  # noqa: BLE001 - reported, never raised into Qt
                self.download_errored.emit(repo_id, readable_error(error))
                return
            self.download_finished.emit(repo_id, str(path))

    @Slot()
    def check_hub(self) -> None:
        """Any HTTP answer means the hub is reachable; no answer within a few seconds means offline."""
        url = hub_endpoint() + "/api/models?limit=1"
        try:
            urllib.request.urlopen(url, timeout=HUB_CHECK_TIMEOUT_S).close()
        except urllib.error.HTTPError:
            pass
        except (urllib.error.URLError, OSError) as error:
            self.hub_check_finished.emit(
                False,
                f"The Hugging Face hub cannot be reached: {why_unreachable(error)}. Showing the models on this "
                "computer: open a model folder or a GGUF file, or connect to download.",
            )
            return
        self.hub_check_finished.emit(True, "")
