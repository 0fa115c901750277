"""The tiny DFlash and DSpark drafters and their targets (engine/fixtures/tiny_dflash.py, tiny_dspark.py), built
and loaded once per session.

Test modules import `dflash_pairs` to use them: `dflash_pairs.target(kind)` is the LoadedModel of a target
("qwen3" dense, "qwen3_5" hybrid GatedDeltaNet), `dflash_pairs.folders(kind, **variant)` the (target, drafter)
folders, and `dflash_pairs.pair(kind, **variant)` a fresh ModelPair drafting with the drafter (`version` 2:
DFlash2; `sliding`: a sliding-window layer); `dspark_folders` and `dspark_pair` the same for DSpark drafters in
DeepSeek's format, over the same targets. Their drafters are of DRAFTER_SEED (DSPARK_SEED), whose drafts the
targets accept more often than the fixture's default's on the chat prompts here (about 5% of DFlash's block
tokens on each pair, a tenth of DSpark's: random drafters over 7 letters are seldom right, and partial accepts
need some rights).

`reference_drafter` loads a drafter folder with z-lab's own code (PyPI `dflash`, a test-only dependency).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.decoding.pair import ModelPair
from engine.fixtures.tiny_dflash import build_dflash_pair
from engine.fixtures.tiny_dspark import build_dspark_pair
from engine.models.loading import LoadedModel, load_model

DRAFTER_SEED = 4
DSPARK_SEED = 5


class DFlashPairs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._targets: dict[str, LoadedModel] = {}

    def folders(self, kind: str, **variant: Any) -> tuple[Path, Path]:
        return build_dflash_pair(self.root, kind, drafter_seed=DRAFTER_SEED, **variant)

    def target(self, kind: str) -> LoadedModel:
        if kind not in self._targets:
            self._targets[kind] = load_model(str(self.folders(kind)[0]))
        return self._targets[kind]

    def pair(self, kind: str, **variant: Any) -> ModelPair:
        pair = ModelPair(self.target(kind))
        pair.set_drafter("dflash", self.folders(kind, **variant)[1])
        return pair

    def dspark_folders(self, kind: str, **variant: Any) -> tuple[Path, Path]:
        return build_dspark_pair(self.root, kind, drafter_seed=DSPARK_SEED, **variant)

    def dspark_pair(self, kind: str, **variant: Any) -> ModelPair:
        pair = ModelPair(self.target(kind))
        pair.set_drafter("dspark", self.dspark_folders(kind, **variant)[1])
        return pair


@pytest.fixture(scope="session")
def dflash_pairs(tmp_path_factory: pytest.TempPathFactory) -> DFlashPairs:
    return DFlashPairs(tmp_path_factory.mktemp("dflash-pairs"))


def reference_drafter(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """z-lab's load_draft on a local folder (it only knows hub ids, so its snapshot_download is patched)."""
    import dflash.model_mlx as ref

    monkeypatch.setattr(ref, "snapshot_download", lambda *args, **kwargs: str(folder))
    return ref.load_draft("z-lab/local-test-drafter")
