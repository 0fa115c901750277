"""`--hosts FILE`: a CLI command run with the target pipelined across the Macs of an mlx.launch hostfile.

Typed on the head, the command starts itself on every host through `mlx.launch` (engine/distributed/launch.py).
Started by mlx.launch (the process has `MLX_RANK`), it joins the pipeline: the head runs the command with the
pipelined pair, the other ranks follow it until it ends.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from ..decoding.pair import ModelPair
from ..distributed.group import is_rank


def across_macs(args: argparse.Namespace, run: Callable[[ModelPair], int]) -> int:
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
        return run(session.pair)
