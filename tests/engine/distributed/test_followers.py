"""The other Macs of an app-led pipeline: the ring's hostfile as mlx.launch writes it, the shell line each runs, and
a Mac that cannot start named in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.distributed.followers import CHECK_IN_ENV, Followers, follow_command, follower_script, ring_hostfile
from engine.distributed.hostfile import NAMES_ENV, Host
from engine.errors import DistributedError

HEAD = Host("mac-studio", ("127.0.0.1",))
UNREACHABLE = Host("no-such-mac.invalid", ("10.255.255.1",))


def test_the_ring_hostfile_counts_ports_up_from_the_first_as_mlx_launch_does() -> None:
    assert ring_hostfile([HEAD, UNREACHABLE], 32323) == [["127.0.0.1:32323"], ["10.255.255.1:32324"]]


def test_a_follower_s_shell_line_sets_the_rank_the_ring_and_the_check_in_then_removes_the_hostfile() -> None:
    ring = [["127.0.0.1:5000"], ["127.0.0.1:5001"]]
    probe = [sys.executable, "-c", "import json, os; print(json.dumps({k: os.environ[k] for k in ('MLX_RANK', "
             f"'{NAMES_ENV}', '{CHECK_IN_ENV}', 'MLX_HOSTFILE')}} | {{'ring': open(os.environ['MLX_HOSTFILE']).read()}}))"]
    out = subprocess.run(["bash", "-c", follower_script(1, ring, "a,b", "127.0.0.1:6000", probe)], capture_output=True,
                         text=True, check=True).stdout
    seen = json.loads(out)
    assert {k: seen[k] for k in ("MLX_RANK", NAMES_ENV, CHECK_IN_ENV)} == {"MLX_RANK": "1", NAMES_ENV: "a,b",
                                                                          CHECK_IN_ENV: "127.0.0.1:6000"}
    assert json.loads(seen["ring"]) == ring and not Path(seen["MLX_HOSTFILE"]).exists()  # removed once it ended
    assert follow_command("my model")[-3:] == ["-m", "engine.distributed.follow", "my model"]


def test_a_mac_that_cannot_be_reached_is_named_with_what_ssh_said(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    ring = ring_hostfile([HEAD, UNREACHABLE], 32323)
    (tmp_path / "ring.json").write_text(json.dumps(ring))
    monkeypatch.setenv("MLX_HOSTFILE", str(tmp_path / "ring.json"))
    monkeypatch.setenv(NAMES_ENV, f"{HEAD.ssh},{UNREACHABLE.ssh}")
    followers = Followers([HEAD, UNREACHABLE], ring, "model", timeout=120)
    with pytest.raises(DistributedError) as failed:
        followers.wait_for_check_in()
    followers.close(wait_s=0)
    assert str(failed.value).startswith("SpecChat did not start on no-such-mac.invalid (10.255.255.1, rank 1): ssh: ")
    assert "\n" not in str(failed.value)
