"""The engine worker's load: the drafters a loaded pair offers, each built-in one loaded with the pair."""

from __future__ import annotations

import json
import shutil

import pytest

from app.worker import EngineWorker, PairInfo
from engine import drafter_kinds
from tests.helpers import registered

# A made-up drafter built into its targets: heads their config declares (`sprout_layers`), read from their own files.
SPROUT_ROUND = '''
"""The made-up Sprout heads' round side: loaded from the target itself, or refused where its files lack them."""
from engine.decoding.drafting.drafter_state import AttachedStates
from engine.decoding.hidden_states import LayerTap
from engine.errors import UnsupportedModelError


class SproutState(AttachedStates):
    taps = (LayerTap(-1),)

    def heard(self, position, states):
        pass

    @property
    def state(self):
        return []

    def reset(self):
        pass

    def forget_from(self, position):
        pass


def load_state(target, target_cache, path):
    if target.config["sprout_layers"] == "dropped":
        raise UnsupportedModelError("its conversion dropped the sprout.* tensors")
    return SproutState(target_cache)
'''
SPROUT = drafter_kinds.DrafterKind("sprout", "built-in Sprout drafter", target_keys=("sprout_layers",), listens=True,
                                   pairs_with="built-in", round="sprout_kind.round")


@pytest.fixture
def sprout(tmp_path, monkeypatch):
    """The Sprout kind registered with its round module (cleared afterwards)."""
    registered(SPROUT, {"round.py": SPROUT_ROUND}, tmp_path, monkeypatch)
    yield SPROUT
    drafter_kinds.KINDS.pop("sprout")


def load(qtbot, target, isolated_home) -> tuple[EngineWorker, PairInfo]:
    """The worker's load of `target` alone, as the picker asks for it."""
    worker = EngineWorker()
    worker.load_errored.connect(pytest.fail)
    with qtbot.waitSignal(worker.load_finished) as loaded:
        worker.load(1, str(target), "")
    worker.history_indexing.join()
    return worker, loaded.args[0]


def with_heads(tiny_dirs, tmp_path, declared: object):
    """The tiny target, its config declaring Sprout heads (`declared`: how many, or "dropped" for a conversion whose
    files lost them)."""
    target = shutil.copytree(tiny_dirs[0], tmp_path / f"sprouting-{declared}")
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, "sprout_layers": declared}))
    return target


def test_a_built_in_drafter_of_any_kind_loads_with_the_pair(qtbot, sprout, tiny_dirs, tmp_path, isolated_home) -> None:
    """Its row says it is built into the target: the worker loads it with the pair (not in the first answer that
    drafts with it) and offers it, as it does the MTP heads, with no line of the app naming it."""
    worker, info = load(qtbot, with_heads(tiny_dirs, tmp_path, 1), isolated_home)
    assert info.drafters == ("lookup", "sprout") and "sprout" in worker.pair.drafters  # loaded: a pair loads heads lazily


def test_a_built_in_drafter_the_target_s_files_lack_is_not_offered(qtbot, sprout, tiny_dirs, tmp_path,
                                                                      isolated_home) -> None:
    worker, info = load(qtbot, with_heads(tiny_dirs, tmp_path, "dropped"), isolated_home)
    assert info.drafters == ("lookup",) and worker.pair is not None and "sprout" not in worker.pair.drafters
