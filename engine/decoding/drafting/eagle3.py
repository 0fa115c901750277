"""Drafting with an EAGLE-3 drafter, from the tapped hidden states the target's own passes already computed.

The drafter's entry t pairs the target's state at t (three layers' inputs, fused by its `fc`) with the token at
t + 1, and its later draft tokens chain on its own outputs: the MTP head's scheme, so a chat's EAGLE-3 side is an
`MTPState` whose runner is EAGLE-3's (`drafters/eagle3_model.py`). It listens to every target pass (prefill chunks,
plain steps, verify passes) through `CachedModel.listener`, feeds the verified positions into its own KV cache
with the next draft's first pass, and drops the chained entries of a draft before the next round, so its cache
rewinds with the round's verdict and with a Regenerate or an edit.

The drafter's vocabulary is a subset of the target's (`d2t`). Its logits reach the warp at the target's width with
-inf outside that subset, so q, the distribution each draft token is drawn from, is zero there and the exact
rejection rule keeps the target's distribution at every temperature; greedy drafts are its argmax mapped to
target ids.
"""

from __future__ import annotations

from pathlib import Path

from ...drafters.eagle3 import load_eagle3
from ...drafters.eagle3_model import Eagle3Runner
from ...models.loading import LoadedModel
from ..cached_model import CachedModel
from ..hidden_states import LayerTap
from .maker import MakerInputs
from .mtp import MTPDrafter, MTPState

SOURCE = "eagle3"


class Eagle3State(MTPState):
    """A chat's EAGLE-3 side: the drafter's cache, what it was built from, and the fused states not read yet.

    Args:
        runner: the drafter bound to the target (`drafters/eagle3.load_eagle3`).
        target: the target's cache, whose passes it listens to while attached.
    """

    def __init__(self, runner: Eagle3Runner, target: CachedModel) -> None:
        super().__init__(runner, target)
        self.taps = tuple(LayerTap(layer, where) for layer, where in runner.taps)


def load_state(target: LoadedModel, target_cache: CachedModel, path: Path) -> Eagle3State:
    """The EAGLE-3 drafter in `path` bound to the target, with its side of the chat; one line if it does not fit."""
    return Eagle3State(load_eagle3(path, target), target_cache)


def make_drafter(given: MakerInputs) -> MTPDrafter:
    """The round's drafter for the pair's EAGLE-3 state: K chained steps, each keeping the (target-width) q it drew
    from."""
    return MTPDrafter(given.state(Eagle3State), given.warper, given.policy, SOURCE)
