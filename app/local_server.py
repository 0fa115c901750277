"""The app's "Local server": the OpenAI-compatible endpoint (`engine/serving/server.py`) over the loaded pair.

The server's event loop runs in a thread of its own; its requests become jobs that the engine worker runs on
its thread, the one that owns MLX, between (never during) the chat's answers. Requests start from the
settings the window uses at the time. Only loopback is served from the app: the CLI's `serve --host --api-key`
is the way to serve other machines.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from engine.errors import SpecChatError
from engine.serving.generation_queue import GenerationJob, model_ids
from engine.serving.listener import RunningServer, bind
from engine.serving.request_log import RequestRecord
from engine.serving.server import create_app

from .session import ChatSession
from .worker import PairInfo

HOST = "127.0.0.1"
DEFAULT_PORT = 8080


class WorkerRunner(QObject):
    """The server's job runner in the app: hands each job to the engine worker's thread (a queued signal)."""

    job_submitted = Signal(object)

    def __init__(self, session: ChatSession) -> None:
        super().__init__()
        self._ids: list[str] = []
        self._engine = session.engine
        self.job_submitted.connect(session.engine.serve_job)
        session.pair_loaded.connect(self.set_pair)
        if session.pair is not None:
            self.set_pair(session.pair)

    def set_pair(self, info: PairInfo) -> None:
        self._ids = model_ids(info.target_name, info.target)

    def submit(self, job: GenerationJob) -> None:
        """Queue the job on the worker (counted there, so that a chat answer behind it can say it waits)."""
        self._engine.count_server_job(1)
        self.job_submitted.emit(job)

    def model_ids(self) -> list[str]:
        return list(self._ids)


class LocalServer(QObject):
    """Starts and stops the server; reports each request and its state.

    Signals:
        logged(str): one line per finished request.
        state_changed(str): the address served ("" when stopped).
        failed(str): the server could not start; the message says why and what to do.
    """

    logged = Signal(str)
    state_changed = Signal(str)
    failed = Signal(str)

    def __init__(self, session: ChatSession, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.runner = WorkerRunner(session)
        self.running: RunningServer | None = None

    @property
    def address(self) -> str:
        return f"http://{HOST}:{self.running.port}/v1" if self.running else ""

    def start(self, port: int = DEFAULT_PORT) -> bool:
        """Serve on loopback at `port` (0: any free port); False, with `failed` emitted, if it cannot."""
        if self.running:
            return True
        try:
            sock = bind(HOST, port)
        except SpecChatError as error:
            self.failed.emit(str(error).replace("with --port", "in the Port box"))
            return False
        app = create_app(self.runner, lambda: self.session.params, log=self._log)
        self.running = RunningServer(app, sock)
        self.running.start()
        self.state_changed.emit(self.address)
        return True

    def stop(self) -> None:
        """Stop serving: open streams end, and their generations are cancelled within a round."""
        if self.running:
            self.running.stop()
            self.running = None
            self.state_changed.emit("")

    def _log(self, record: RequestRecord) -> None:  # on the server's thread; the signal is queued to the GUI
        self.logged.emit(record.line())
