"""Keep MLX's ring chatter out of the terminal: one clear error line, not ten lines of "[ring] Socket 4 was closed".

When a peer leaves, MLX's ring backend writes a line to the C++ standard error for every failed socket operation
before it raises. A rank's standard error is therefore routed through a pipe whose reader drops lines that begin
with "[ring]" and passes everything else on unchanged (Python's own writes included, in order).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

PREFIX = b"[ring]"
_terminal: int | None = None  # the real standard error, while the filter runs


def terminal_fd() -> int:
    """The real standard error's file descriptor (the filter's pipe is fd 2 while it runs)."""
    return _terminal if _terminal is not None else 2


def urgent(line: str) -> None:
    """Write one line straight to the terminal: for a process about to end with os._exit, which would leave
    what is still in the pipe unread."""
    os.write(terminal_fd(), (line + "\n").encode())


def quiet_ring_messages() -> None:
    """Route this process's standard error (file descriptor 2) through the filter, until it exits."""
    global _terminal
    if _terminal is not None:
        return  # filtered already (the app may start a pipeline again after a failed start)
    sys.stderr.flush()
    original = _terminal = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    reader = threading.Thread(target=_forward, args=(read_end, original), daemon=True, name="ring-noise")
    reader.start()

    def restore() -> None:
        sys.stderr.flush()
        os.dup2(original, 2)  # the pipe's last writer closes: the reader sees the end and finishes
        reader.join(timeout=2)

    atexit.register(restore)


def _forward(read_end: int, out: int) -> None:
    pending = b""
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while chunk := pipe.read(4096):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            _write(out, lines)
    _write(out, [pending] if pending else [])


def _write(out: int, lines: list[bytes]) -> None:
    kept = [line for line in lines if not line.lstrip().startswith(PREFIX)]
    if kept:
        os.write(out, b"\n".join(kept) + b"\n")
