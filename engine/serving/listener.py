"""Where the server listens: the socket it binds (loopback unless a key guards it) and the uvicorn thread that
serves the app on it, for `specchat-cli serve` and the app's "Local server" alike."""

from __future__ import annotations

import ipaddress
import signal
import socket
import threading
import time
from types import FrameType

from starlette.applications import Starlette

from ..errors import SpecChatError


def check_host(host: str, api_key: str | None) -> None:
    """Refuse to serve beyond this machine without a key."""
    if api_key or is_loopback(host):
        return
    raise SpecChatError(
        f"Serving on {host} lets other machines use the model: pass --api-key KEY (clients send it as a Bearer "
        "token), or serve on 127.0.0.1."
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port), or an error saying what to do."""
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(info[0], socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
        sock.listen(64)
        return sock
    except OSError as e:
        reason = "it is in use" if e.errno in (48, 98) else (e.strerror or str(e))
        raise SpecChatError(f"Cannot serve on {host}:{port}: {reason}. Pick another port with --port.") from e


class RunningServer:
    """uvicorn serving an app on a bound socket, in a thread of its own (the app) or the caller's (the CLI)."""

    def __init__(self, app: Starlette, sock: socket.socket, lifespan: bool = False) -> None:
        """`lifespan`: run the app's startup and shutdown (an MCP server's app starts its sessions' task group there;
        SpecChat's own app has none)."""
        import uvicorn

        self.sock, self.app = sock, app
        config = uvicorn.Config(app, log_level="warning", loop="asyncio", http="h11", ws="none",
                                lifespan="on" if lifespan else "off",
                                timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def run(self) -> None:
        """Serve until interrupted (Ctrl-C, raised here as KeyboardInterrupt once the server has stopped) or `stop()`.

        uvicorn hears Ctrl-C only once its event loop runs. Before that, Python's own handler would raise
        KeyboardInterrupt wherever it landed, even inside asyncio building that loop, which leaves a half-made loop
        and an unawaited coroutine to print warnings as the process ends. So from the start Ctrl-C only asks the
        server to stop, as uvicorn's handler does."""
        if threading.current_thread() is not threading.main_thread() \
                or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            self.server.run(sockets=[self.sock])  # a thread, or SIGINT ignored or handled elsewhere
            return
        interrupted: list[int] = []

        def ask_to_stop(sig: int, frame: FrameType | None) -> None:
            interrupted.append(sig)
            self.server.handle_exit(sig, frame)

        signal.signal(signal.SIGINT, ask_to_stop)
        try:
            self.server.run(sockets=[self.sock])
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if interrupted:
            raise KeyboardInterrupt

    def start(self) -> None:
        """Serve in a background thread; returns once it accepts connections."""
        self._thread = threading.Thread(target=self.run, name="specchat-server", daemon=True)
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            time.sleep(0.01)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving. Open requests' generations are cancelled first (`ServerState.stop_jobs`), so that their
        responses close within a round, in their APIs' shapes, before the shutdown's grace runs out."""
        state = getattr(self.app.state, "server", None)  # SpecChat's app has one; an MCP server's app does not
        if state is not None:
            state.stop_jobs()
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self.sock.close()
