"""The weights stage of a GGUF import: its progress moves in small slices of the file's bytes, whatever the size
of a tensor, a cancel is seen between any two slices, and slicing leaves the imported weights byte for byte the
same."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import LoadCancelled
from engine.models import gguf_weights
from engine.models.gguf_import import import_gguf
from tests.engine.models.test_gguf_import import TYPES, _write_synthetic

Report = tuple[str, int, int]


def recorded_import(path: Path, out: Path) -> list[Report]:
    reports: list[Report] = []
    import_gguf(path, out, progress=lambda stage, done, total: reports.append((stage, done, total)))
    return reports


def weights_steps(reports: list[Report], name: str) -> tuple[list[int], int]:
    """The weights stage's bytes done, report by report, and its total."""
    weights = [(done, total) for stage, done, total in reports if stage == f"Importing {name}"]
    return [done for done, _ in weights], weights[0][1]


def stage_names(reports: list[Report]) -> list[str]:
    """Each stage once, in the order it first reported."""
    return list(dict.fromkeys(stage for stage, _, _ in reports))


@pytest.mark.real_weights
def test_smollm2s_weights_move_the_bar_by_at_most_two_percent_a_step_and_import_the_same_bytes(
    smollm_gguf: Path, smollm_dir: Path, tmp_path: Path,
) -> None:
    """Issue 32: progress came once per tensor, so SmolLM2 Q4_1's embedding (31% of its bytes) moved the bar from
    0 to 31% at once, after seconds of standing still."""
    reports = recorded_import(smollm_gguf, tmp_path / "out")
    name = smollm_gguf.name
    assert stage_names(reports) == [f"Reading {name}", f"Importing {name}", f"Saving the weights of {name}",
                                    f"Converting the tokenizer of {name}"]
    done, total = weights_steps(reports, name)
    assert done[0] == 0 and done[-1] == total and done == sorted(done)
    largest = max(b - a for a, b in zip(done, done[1:]))
    assert largest <= 0.02 * total, f"a step of {100 * largest / total:.1f}% of the weights"
    assert (tmp_path / "out" / "model.safetensors").read_bytes() == (smollm_dir / "model.safetensors").read_bytes()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every block format, 1.4 MB in all: its tensors (the embedding 104 KB) are one slice each unless
    `MIN_STEP_BYTES` is lowered."""
    return _write_synthetic(tmp_path_factory.mktemp("gguf"), TYPES)[0]


def test_slicing_a_tensor_leaves_the_imported_bytes_as_they_were(synthetic: Path, tmp_path: Path, monkeypatch) -> None:
    path = synthetic
    whole = recorded_import(path, tmp_path / "whole")
    monkeypatch.setattr(gguf_weights, "MIN_STEP_BYTES", 4096)
    sliced = recorded_import(path, tmp_path / "sliced")
    assert len(weights_steps(sliced, path.name)[0]) > len(weights_steps(whole, path.name)[0])
    for shard in (tmp_path / "whole").glob("*.safetensors"):
        assert (tmp_path / "sliced" / shard.name).read_bytes() == shard.read_bytes()


def test_a_cancel_inside_a_tensor_ends_the_import_and_keeps_nothing(synthetic: Path, tmp_path: Path, monkeypatch) -> None:
    """The first slice of the first tensor (the embedding, 104 KB) is the second weights report: a cancel raised
    from it ends the import before the next slice is read."""
    path = synthetic
    monkeypatch.setattr(gguf_weights, "MIN_STEP_BYTES", 4096)
    reports: list[Report] = []

    def cancel_in_the_embedding(stage: str, done: int, total: int) -> None:
        reports.append((stage, done, total))
        if stage.startswith("Importing") and done:
            raise LoadCancelled(stage)

    with pytest.raises(LoadCancelled):
        import_gguf(path, tmp_path / "out", progress=cancel_in_the_embedding)
    assert list(tmp_path.iterdir()) == []
    done, total = weights_steps(reports, path.name)
    assert done == [0, done[1]] and 0 < done[1] < 104448 < total  # inside the embedding
