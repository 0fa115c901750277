"""`--hosts FILE`: a CLI command run with the target pipelined across the Macs of an mlx.launch hostfile.

Typed on the head, the command starts itself on every host through `mlx.launch` (engine/distributed/launch.py).
Started by mlx.launch (the process has `MLX_RANK`), it joins the pipeline: the head runs the command with the
pipelined pair, the other ranks follow it until it ends.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..distributed.group import is_rank

if TYPE_CHECKING:
    from ..distributed.cluster import HeadSession
    from ..serving.listener import RunningServer

BROKEN_POLL_S = 0.2


def across_macs(args: argparse.Namespace, run: Callable[[HeadSession], int]) -> int:
    """Launch the command on every host, or (as a rank) join the pipeline and `run` on the head."""
    if not is_rank():
        from ..distributed.launch import launch

        return launch(args.hosts, args.argv, args.ring_port)
    from ..distributed.cluster import start

    session = start(args.target, args.draft)
    if session is None:
        return 0
    with session:
        print(f"note: {session.describe()}", file=sys.stderr, flush=True)
        code = run(session)
    return 1 if session.transport.failure else code


def stop_when_broken(session: HeadSession) -> Callable[[RunningServer], None]:
    """For `serve --hosts`: once the pipeline fails (a Mac stopped), the answer under way gets the error, the
    server stops, and the command ends with that one line and status 1, rather than serving errors."""

    def watch(server: RunningServer) -> None:
        def wait_for_failure() -> None:
            while session.transport.failure is None:
                threading.Event().wait(BROKEN_POLL_S)
            print(f"error: {session.transport.failure}", file=sys.stderr, flush=True)
            server.server.should_exit = True

        threading.Thread(target=wait_for_failure, daemon=True, name="pipeline-failure").start()

    return watch
