"""MLX's two hostfile formats, and how a rank names the Macs in its messages.

- The user's hostfile, as `mlx.launch --hostfile` reads it: `{"hosts": [{"ssh": "mac-a", "ips": ["10.0.0.1"]},
  ...]}` (or the bare list); the first host is the head. `specchat-cli generate --hosts FILE` hands it to
  `mlx.launch` (launch.py).
- The ring's hostfile, which `mlx.launch` (or `local_launch.py`) writes for the ranks and names in
  `MLX_HOSTFILE`: one list of "ip:port" per rank, `[["10.0.0.1:32323"], ["10.0.0.2:32324"]]`.

Errors name a Mac by its ssh name when the launcher passed the names along (`SPECCHAT_HOST_NAMES`), else by the
address the ring reaches it at.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import DistributedError

NAMES_ENV = "SPECCHAT_HOST_NAMES"
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Host:
    """A Mac of the user's hostfile: the name `ssh` reaches it by and the addresses the ring uses."""

    ssh: str
    ips: tuple[str, ...]


def read_hostfile(path: Path) -> list[Host]:
    """The hosts of a user's hostfile (mlx.launch's format), refusing one that cannot drive a ring."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise DistributedError(f"Cannot read the hostfile {path}: {e.strerror}. Check the path.") from e
    except ValueError as e:
        raise DistributedError(f"The hostfile {path} is not JSON ({e}). Write it as mlx.launch's hostfile.") from e
    entries = data.get("hosts") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not all(isinstance(h, dict) and isinstance(h.get("ssh"), str) for h in entries):
        raise DistributedError(
            f"The hostfile {path} lists no hosts: write {{\"hosts\": [{{\"ssh\": \"mac-a\", \"ips\": [\"10.0.0.1\"]}}, ...]}}, "
            "the head first."
        )
    hosts = [Host(h["ssh"], tuple(h.get("ips") or ())) for h in entries]
    if len(hosts) < 2:
        raise DistributedError(f"The hostfile {path} lists {len(hosts)} host: a pipeline needs two Macs or more.")
    missing = [h.ssh for h in hosts if not h.ips]
    if missing:
        raise DistributedError(
            f"The hostfile {path} gives no IP address for {', '.join(missing)}: MLX's ring backend needs each host's "
            'IP in "ips".'
        )
    return hosts


def ring_addresses() -> list[str]:
    """Each rank's address ("ip"), from the ring's hostfile in MLX_HOSTFILE (empty when there is none)."""
    path = os.environ.get("MLX_HOSTFILE")
    if not path:
        return []
    try:
        ranks = json.loads(Path(path).read_text(encoding="utf-8"))
        return [str(entries[0]).rsplit(":", 1)[0] for entries in ranks]
    except (OSError, ValueError, IndexError, TypeError):
        return []


def host_label(rank: int) -> str:
    """How messages name a rank's Mac: "mac-b (10.0.0.2, rank 1)", or "127.0.0.1 (rank 1)"."""
    addresses = ring_addresses()
    names = [n for n in os.environ.get(NAMES_ENV, "").split(",") if n]
    address = addresses[rank] if rank < len(addresses) else "an unknown address"
    if rank < len(names) and names[rank] != address:
        return f"{names[rank]} ({address}, rank {rank})"
    return f"{address} (rank {rank})"
