"""The user's hostfile (mlx.launch's format), the ring's, and how errors name a Mac."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.distributed.hostfile import NAMES_ENV, Host, host_label, read_hostfile, ring_addresses
from engine.errors import DistributedError


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps(data))
    return path


def test_mlx_launch_hostfiles_are_read_in_both_shapes(tmp_path: Path) -> None:
    hosts = [{"ssh": "mac-a", "ips": ["10.0.0.1"]}, {"ssh": "mac-b", "ips": ["10.0.0.2"]}]
    expected = [Host("mac-a", ("10.0.0.1",)), Host("mac-b", ("10.0.0.2",))]
    assert read_hostfile(write(tmp_path, {"backend": "ring", "hosts": hosts})) == expected
    assert read_hostfile(write(tmp_path, hosts)) == expected


@pytest.mark.parametrize(
    "data, problem",
    [
        ({"hosts": [{"ssh": "mac-a", "ips": ["10.0.0.1"]}]}, "lists 1 host: a pipeline needs two Macs or more"),
        ({"hosts": [{"ssh": "mac-a", "ips": ["10.0.0.1"]}, {"ssh": "mac-b"}]}, "gives no IP address for mac-b"),
        ({"machines": []}, "lists no hosts"),
    ],
)
def test_a_hostfile_that_cannot_drive_a_ring_is_refused_in_one_line(tmp_path: Path, data: object, problem: str) -> None:
    with pytest.raises(DistributedError, match=problem):
        read_hostfile(write(tmp_path, data))


def test_a_missing_or_broken_hostfile_says_so(tmp_path: Path) -> None:
    with pytest.raises(DistributedError, match="Cannot read the hostfile"):
        read_hostfile(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(DistributedError, match="is not JSON"):
        read_hostfile(tmp_path / "bad.json")


def test_a_rank_is_named_by_its_ssh_name_when_the_launcher_passed_the_names(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MLX_HOSTFILE", str(write(tmp_path, [["10.0.0.1:5000"], ["10.0.0.2:5001"]])))
    monkeypatch.delenv(NAMES_ENV, raising=False)
    assert ring_addresses() == ["10.0.0.1", "10.0.0.2"]
    assert host_label(1) == "10.0.0.2 (rank 1)"
    monkeypatch.setenv(NAMES_ENV, "mac-a,mac-b")
    assert host_label(1) == "mac-b (10.0.0.2, rank 1)"
