"""The tiny EAGLE-3 drafter and its target (engine/fixtures/tiny_eagle3.py), built and loaded once per session.

Test modules import `eagle3_pair` to use it: `eagle3_pair.target()` is the target's LoadedModel,
`eagle3_pair.folders(**variant)` the (target, drafter) folders of a drafter variant, and `eagle3_pair.pair(**variant)`
a fresh ModelPair drafting with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.decoding.pair import ModelPair
from engine.fixtures.tiny_eagle3 import build_eagle3_pair
from engine.models.loading import LoadedModel, load_model


class Eagle3Pairs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._target: LoadedModel | None = None

    def folders(self, **variant: Any) -> tuple[Path, Path]:
        return build_eagle3_pair(self.root, **variant)

    def target(self) -> LoadedModel:
        if self._target is None:
            self._target = load_model(str(self.folders()[0]))
        return self._target

    def pair(self, **variant: Any) -> ModelPair:
        pair = ModelPair(self.target())
        pair.set_drafter("eagle3", self.folders(**variant)[1])
        return pair


@pytest.fixture(scope="session")
def eagle3_pair(tmp_path_factory: pytest.TempPathFactory) -> Eagle3Pairs:
    return Eagle3Pairs(tmp_path_factory.mktemp("eagle3"))
