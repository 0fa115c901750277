"""A loopback HTTP server that speaks the parts of the Hugging Face hub protocol huggingface_hub uses to download.

    GET  /api/models/{repo}[/revision/{rev}]   model info with files and sizes (404 + X-Error-Code for unknown)
    HEAD /{repo}/resolve/{rev}/{file}           X-Repo-Commit, ETag, Content-Length (401 GatedRepo when gated)
    GET  /{repo}/resolve/{rev}/{file}           the bytes, honouring Range (206), optionally throttled

Tests point $HF_ENDPOINT at it, so the real download code runs unchanged.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class FakeRepo:
    files: dict[str, bytes]
    gated: bool = False
    sha: str = field(default_factory=lambda: hashlib.sha1(str(time.time_ns()).encode()).hexdigest())


class FakeHub:
    """The server and what it serves.

    Attributes:
        repos: repo id -> FakeRepo.
        bytes_per_second: throttle for file bodies (None: as fast as possible).
        requests: (method, path, Range header) of every request, for assertions.
    """

    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.bytes_per_second: float | None = None
        self.requests: list[tuple[str, str, str | None]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        # serve_forever looks for shutdown() every poll interval: its default half second was each test's teardown.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def add_folder(self, repo_id: str, folder: Path, extra: dict[str, bytes] | None = None, gated: bool = False) -> FakeRepo:
        files = {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()}
        files.update(extra or {})
        self.repos[repo_id] = FakeRepo(files, gated=gated)
        return self.repos[repo_id]

    def start(self) -> FakeHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def _record(self) -> None:
            hub.requests.append((self.command, self.path, self.headers.get("Range")))

        def _error(self, status: int, code: str, message: str) -> None:
            body = json.dumps({"error": message}).encode()
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", message)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, data: object) -> None:
            body = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._record()
            path = self.path.split("?")[0]
            info = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/[^/]+)?", path)
            if info:
                repo = hub.repos.get(info.group(1))
                if repo is None:
                    return self._error(404, "RepoNotFound", "Repository not found")
                siblings = [{"rfilename": name, "size": len(data), "blobId": hashlib.sha1(data).hexdigest()} for name, data in repo.files.items()]
                return self._json({"id": info.group(1), "modelId": info.group(1), "sha": repo.sha, "siblings": siblings,
                                   "private": False, "gated": "auto" if repo.gated else False, "disabled": False})
            self._resolve(send_body=True)

        def do_HEAD(self) -> None:
            self._record()
            self._resolve(send_body=False)

        def _resolve(self, send_body: bool) -> None:
            match = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", self.path.split("?")[0])
            repo = hub.repos.get(match.group(1)) if match else None
            if repo is None:
                return self._error(404, "RepoNotFound", "Repository not found")
            if repo.gated:
                return self._error(401, "GatedRepo", "Access to this model is restricted. You must have access to it and be authenticated.")
            data = repo.files.get(match.group(3))
            if data is None:
                return self._error(404, "EntryNotFound", "Entry not found")
            start = 0
            ranged = self.headers.get("Range")
            if ranged:
                start = int(re.match(r"bytes=(\d+)-", ranged).group(1))
            self.send_response(206 if ranged else 200)
            self.send_header("X-Repo-Commit", repo.sha)
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("Content-Length", str(len(data) - start))
            if ranged:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if send_body:
                self._send(data[start:])

        def _send(self, body: bytes) -> None:
            step = 16 * 1024
            try:
                for offset in range(0, len(body), step):
                    self.wfile.write(body[offset : offset + step])
                    if hub.bytes_per_second:
                        time.sleep(step / hub.bytes_per_second)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client cancelled

    return Handler
