"""The app as the head: a Mac that cannot start is named in one line and leaves this process as it was (no rank, free
to try again); a second ring in one process is refused with what to do. (The app test joins a real ring:
tests/app/test_across_macs.py.)"""

from __future__ import annotations

import json
import os

import pytest

from engine.distributed import app_head
from engine.distributed.app_head import start_head
from engine.distributed.hostfile import NAMES_ENV
from engine.errors import DistributedError


def hostfile(folder, *hosts: tuple[str, str]):
    path = folder / "hosts.json"
    path.write_text(json.dumps({"hosts": [{"ssh": ssh, "ips": [ip]} for ssh, ip in hosts]}))
    return path


def test_a_mac_that_cannot_start_is_named_and_this_process_is_no_rank_afterwards(tmp_path, monkeypatch) -> None:
    for key in ("MLX_RANK", "MLX_HOSTFILE", NAMES_ENV):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(app_head, "_joined", [])
    path = hostfile(tmp_path, ("127.0.0.1", "127.0.0.1"), ("no-such-mac.invalid", "10.255.255.1"))
    with pytest.raises(DistributedError, match=r"^SpecChat did not start on no-such-mac.invalid \(10.255.255.1, rank 1\)"):
        start_head(path, "model", None)
    assert not {"MLX_RANK", "MLX_HOSTFILE", NAMES_ENV} & set(os.environ)
    assert app_head._joined == []  # no ring was joined: the user may try again


def test_a_second_ring_in_one_process_is_refused_with_what_to_do(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(app_head, "_joined", [True])
    path = hostfile(tmp_path, ("127.0.0.1", "127.0.0.1"), ("127.0.0.1", "127.0.0.1"))
    with pytest.raises(DistributedError, match="^SpecChat joins the Macs once per launch .*: quit and reopen SpecChat"):
        start_head(path, "model", None)
