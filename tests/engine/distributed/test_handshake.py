"""Before the first token: a rank holding another model than the head's is refused, naming its Mac."""

from __future__ import annotations

import pytest

from engine.distributed import hostfile
from engine.distributed.handshake import Statement, check_same_model
from engine.distributed.local_launch import run_ranks
from engine.errors import DistributedError

from .commands import GREEDY, ROOT, cli_rank


@pytest.fixture
def two_loopback_ranks(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    path = tmp_path / "ring.json"
    path.write_text('[["127.0.0.1:1"], ["127.0.0.1:2"], ["127.0.0.1:3"]]')
    monkeypatch.setenv("MLX_HOSTFILE", str(path))
    monkeypatch.delenv(hostfile.NAMES_ENV, raising=False)


def test_a_statement_travels_as_int32s_and_back() -> None:
    statement = Statement((1, -2, 3, -4), free_mb=24000, port=50123)
    assert Statement.decode(statement.encode()[0].tolist()) == statement


def test_the_same_model_everywhere_passes(two_loopback_ranks) -> None:
    check_same_model([Statement((1, 2, 3, 4), 100, 9), Statement((1, 2, 3, 4), 200)], "m")


def test_another_model_is_refused_naming_the_ranks_that_hold_it(two_loopback_ranks) -> None:
    statements = [Statement((1, 2, 3, 4), 1), Statement((1, 2, 3, 4), 1), Statement((9, 2, 3, 4), 1)]
    with pytest.raises(DistributedError, match=r"^The model m on 127.0.0.1 \(rank 2\) differs from the head's"):
        check_same_model(statements, "m")


def test_another_specchat_version_is_refused(two_loopback_ranks) -> None:
    with pytest.raises(DistributedError, match=r"^127.0.0.1 \(rank 1\) runs another version of SpecChat"):
        check_same_model([Statement((1, 2, 3, 4), 1), Statement((1, 2, 3, 4), 1, version=0)], "m")


@pytest.mark.distributed
def test_a_rank_with_another_model_at_the_same_path_is_refused_before_the_first_token(dense_models, tmp_path) -> None:
    homes = [tmp_path / "head", tmp_path / "other"]
    for home, family in zip(homes, ("qwen2", "llama")):  # "~/model" is a different model on each "Mac"
        home.mkdir()
        (home / "model").symlink_to(dense_models(family)[0])
    command = cli_rank("generate", "--hosts", str(tmp_path / "unused.json"), "--target", "~/model", "--prompt", "Hi",
                       *GREEDY)
    results = run_ranks(command, 2, timeout=120, env={"PYTHONPATH": str(ROOT)},
                        rank_env={r: {"HOME": str(home)} for r, home in enumerate(homes)})
    assert [r.returncode for r in results] == [1, 1]
    assert results[0].stdout == ""  # not one token
    assert [line for line in results[0].stderr.splitlines() if line.strip()] == [
        "error: The model ~/model on 127.0.0.1 (rank 1) differs from the head's (its config or weight shapes): put the "
        "same model at the same path on every Mac."
    ]
