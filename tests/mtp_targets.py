"""The tiny targets with built-in MTP heads (engine/fixtures/tiny_drafters.py), built and loaded once per session.

Test modules import `mtp_target` to use it: `mtp_target(kind)` is the LoadedModel of a kind ("hybrid", "dense",
"hybrid-sidecar") and `mtp_target.folder(kind)` its folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.fixtures.tiny_drafters import build_mtp_target
from engine.models.loading import LoadedModel, load_model


class MTPTargets:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._loaded: dict[str, LoadedModel] = {}

    def folder(self, kind: str) -> Path:
        return build_mtp_target(self.root, kind)

    def __call__(self, kind: str) -> LoadedModel:
        if kind not in self._loaded:
            self._loaded[kind] = load_model(str(self.folder(kind)))
        return self._loaded[kind]


@pytest.fixture(scope="session")
def mtp_target(tmp_path_factory: pytest.TempPathFactory) -> MTPTargets:
    return MTPTargets(tmp_path_factory.mktemp("mtp-targets"))
