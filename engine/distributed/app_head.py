"""The app as the head of a pipeline: this process becomes rank 0, starts the other Macs, and loads the pair across them.

`specchat-cli --hosts` is started by `mlx.launch` on every Mac. The app runs already, so it does what mlx.launch would
have done for it: it writes the ring's hostfile and sets `MLX_RANK`/`MLX_HOSTFILE` in its own environment, starts
the other ranks (`followers.py`), waits for them to check in, then joins and loads as any head does
(`cluster.start`). MLX keeps the first ring a process joins for the rest of its life (`mx.distributed.init`
returns it again), so the app joins the Macs once per launch: after that ring is closed or broken, running across
Macs again needs SpecChat reopened, and it says so.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import DistributedError
from .cluster import HeadSession, start
from .followers import Followers, ring_hostfile
from .group import JOIN_TIMEOUT_S
from .hostfile import NAMES_ENV, read_hostfile

PORT_ENV = "SPECCHAT_RING_PORT"  # the ring's first port (mlx.launch's default otherwise)
DEFAULT_PORT = 32323

_joined: list[bool] = []  # whether this process joined a ring already (see the module docstring)


@dataclass
class AppHead:
    """A pair loaded across Macs, with the processes the app started for it.

    Attributes:
        session: the head's side of the pipeline (its `pair` generates as on one Mac).
        followers: the other ranks.
    """

    session: HeadSession
    followers: Followers
    folder: Path
    environment: dict[str, str | None]

    @property
    def macs(self) -> int:
        return len(self.session.split)

    def close(self) -> None:
        """Stop every rank (over a ring that failed, just let them go) and wait for them to leave."""
        try:
            self.session.close()
        finally:
            self.followers.close()
            _leave(self.folder, self.environment)


def start_head(hostfile: Path, target: str, draft: str | None) -> AppHead:
    """Start the Macs of `hostfile` (this one first) and load the pair across them; one-line errors name the Mac."""
    hosts = read_hostfile(hostfile)
    if _joined:
        raise DistributedError("SpecChat joins the Macs once per launch (MLX keeps the first ring): quit and reopen "
                               "SpecChat to run the target across Macs again.")
    ring = ring_hostfile(hosts, int(os.environ.get(PORT_ENV) or DEFAULT_PORT))
    folder = Path(tempfile.mkdtemp(prefix="specchat-ring-"))
    (folder / "ring.json").write_text(json.dumps(ring))
    environment = _become_the_head(folder / "ring.json", ",".join(h.ssh for h in hosts))
    followers = Followers(hosts, ring, target, JOIN_TIMEOUT_S)
    try:
        followers.wait_for_check_in()
    except BaseException:
        followers.close(wait_s=0)
        _leave(folder, environment)
        raise
    _joined.append(True)
    try:
        session = start(target, draft)
    except BaseException:
        followers.close()  # the head dismissed them: they leave
        _leave(folder, environment)
        raise
    assert session is not None  # rank 0 is the head
    return AppHead(session, followers, folder, environment)


def _become_the_head(ring: Path, names: str) -> dict[str, str | None]:
    """Set what mlx.launch would have set for rank 0 (the ring's hostfile, the rank, the Macs' names); returns the
    values they replace."""
    values = {"MLX_RANK": "0", "MLX_HOSTFILE": str(ring), NAMES_ENV: names}
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    return before


def _leave(folder: Path, environment: dict[str, str | None]) -> None:
    """Remove the ring's hostfile and put the environment back as it was (this process is no rank any more)."""
    shutil.rmtree(folder, ignore_errors=True)
    for key, value in environment.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
