"""Real ranks on loopback: one process per rank with MLX_RANK and the ring's hostfile, a core each, return codes
under a timeout, nothing left behind."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

from engine.distributed.local_launch import LocalRanks, first_of_free_ports, free_ports, run_ranks

REPORT = (
    "import json, os; from pathlib import Path; hostfile = os.environ['MLX_HOSTFILE']; "
    "print(json.dumps([os.environ['MLX_RANK'], sorted(os.sched_getaffinity(0)), json.loads(Path(hostfile).read_text()), hostfile]))"
)


def test_every_rank_gets_its_rank_the_same_hostfile_and_a_core_of_its_own() -> None:
    results = run_ranks([sys.executable, "-c", REPORT], 2, timeout=60)
    assert [r.returncode for r in results] == [0, 0]
    reports = [json.loads(r.stdout) for r in results]
    assert [rank for rank, *_ in reports] == ["0", "1"]
    hostfile = reports[0][2]
    assert reports[1][2] == hostfile and len({entry[0] for entry in hostfile}) == 2
    assert all(entry[0].startswith("127.0.0.1:") for entry in hostfile)
    cores = sorted(os.sched_getaffinity(0))
    assert [r[1] for r in reports] == [[cores[0]], [cores[1 % len(cores)]]]
    assert not Path(reports[0][3]).exists()  # the hostfile went with the launcher


def test_a_rank_still_running_at_the_timeout_is_killed_and_reported_as_such() -> None:
    """The test lasts the whole timeout (rank 1 never ends): 2 s is still some forty times what rank 0 needs to start
    Python and exit, with both cores busy."""
    with LocalRanks([sys.executable, "-c", "import time, os; time.sleep(0 if os.environ['MLX_RANK'] == '0' else 60)"], 2) as ranks:
        results = ranks.wait(timeout=2)
    assert [r.returncode for r in results] == [0, None]


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3
    first = first_of_free_ports(2)
    for port in (first, first + 1):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
