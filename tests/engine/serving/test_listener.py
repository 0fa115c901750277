"""Where the server listens: loopback unless a key guards it, and a clear error for a port in use."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine.errors import SpecChatError
from engine.serving.listener import bind, check_host


def test_serving_beyond_loopback_needs_a_key() -> None:
    with pytest.raises(SpecChatError, match="--api-key"):
        check_host("0.0.0.0", None)
    check_host("0.0.0.0", "key")
    check_host("127.0.0.1", None)
    check_host("::1", None)


def test_a_port_in_use_is_a_clear_error() -> None:
    taken = bind("127.0.0.1", 0)
    try:
        with pytest.raises(SpecChatError, match="in use. Pick another port"):
            bind("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()


# A child that serves an empty app from its main thread, as `specchat-cli serve` does, with Python's Ctrl-C handler
# (as from a terminal) and a SIGINT sent to itself just as asyncio builds uvicorn's event loop: the moment where
# Ctrl-C once came as a bare KeyboardInterrupt before uvicorn could hear it.
CTRL_C_AS_THE_LOOP_IS_BUILT = """
import asyncio, os, signal, uvicorn
from starlette.applications import Starlette
from engine.serving.listener import RunningServer, bind

def loop_built_under_ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)
    return asyncio.new_event_loop()

signal.signal(signal.SIGINT, signal.default_int_handler)
uvicorn.Config.get_loop_factory = lambda self: loop_built_under_ctrl_c
try:
    RunningServer(Starlette(), bind("127.0.0.1", 0)).run()
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_before_the_event_loop_runs_stops_the_server_without_warnings() -> None:
    """The server stops and `run` raises KeyboardInterrupt, and nothing half-made (a loop, a coroutine never
    awaited) warns on stderr as the process ends."""
    child = subprocess.run([sys.executable, "-c", CTRL_C_AS_THE_LOOP_IS_BUILT], capture_output=True, text=True,
                           timeout=60)
    assert (child.returncode, child.stdout, child.stderr) == (0, "interrupted\n", "")
