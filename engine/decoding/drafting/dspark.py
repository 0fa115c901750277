"""Drafting with a DSpark drafter (DeepSeek's DeepSpec): DFlash's round, DSpark's Markov steps and confidence cut.

A DSpark drafter (`drafters/dspark.py`) is DFlash's backbone with two small heads, so the round treats it as it
treats a DFlash drafter (`dflash.py`): its `DSparkState` is a `DFlashState`, which hears the target's passes and
keeps the drafter's cache of context, and one block pass per round drafts after the last token. What differs:

- the block drafts from its first slot: DeepSeek's block of 7 proposes 7 tokens (`max_draft`), and a round asks
  for the K the policy chose (`block_size = K + 1`): the backbone still sees its whole block, as it was trained,
  but only K Markov steps run;
- each Markov step's logits depend on the token drawn before it, so at T > 0 the draft is sampled along its
  path and each position's q is the warped distribution of that step, what the exact rejection rule needs;
- the confidence head cuts a draft where the chance that its next token survives is too small to pay for its
  place in the verify pass (`DraftPolicy.least_survival`: the verify line's slope times the rate the policy
  predicts; nothing is cut at a fixed K). Position i's confidence reads the block's state at i and the token
  drafted before i, never the token at i, so where a draft stops does not depend on the token it would verify
  next: the output stays the target's, greedy and sampled.
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx

from ...arrays import float_list
from ...drafters.dspark import DSparkDraft, DSparkRunner, confident_length, load_dspark_drafter_for
from ...models.loading import LoadedModel
from ..cached_model import CachedModel
from ..policy.draft_length import DraftPolicy
from ..sampling import Warper
from .dflash import DFlashBlockDrafter, DFlashState
from .maker import MakerInputs

SOURCE = "dspark"


class DSparkState(DFlashState):
    """A chat's DSpark side: DFlash's, holding the DSpark drafter (whose drafts carry their confidences).

    Args:
        runner: the drafter bound to the target (`drafters/dspark.load_dspark_drafter_for`).
        target: the target's cache, whose passes it hears while attached.
    """

    runner: DSparkRunner

    def __init__(self, runner: DSparkRunner, target: CachedModel) -> None:
        super().__init__(runner, target)


class DSparkBlockDrafter(DFlashBlockDrafter):
    """Proposes up to K tokens of a DSpark block, cut by its confidence head, with the q each was drawn from.

    Args:
        state: the chat's DSpark side (`load_state`'s, which the pair keeps).
        warper: the sampling warp shared with the target.
        policy: chooses K and says how sure of a token the cut must be.
    """

    state: DSparkState

    def __init__(self, state: DSparkState, warper: Warper, policy: DraftPolicy) -> None:
        super().__init__(state, warper, policy)
        self.source = SOURCE

    def _block(self, context: list[int], k: int) -> tuple[mx.array, mx.array | None]:
        """K Markov steps after `context`, then the confidence head's cut."""
        block = self.state.runner.draft(context[-1], block_size=k + 1, choose=self._chooser(context),
                                        position=len(context))
        keep = self._confident(block, k)
        return block.ids[:keep], None if block.probs is None else block.probs[:keep]

    def _confident(self, block: DSparkDraft, k: int) -> int:
        """How many of the K drafted tokens to verify: all of them unless the policy asks for a cut and the head
        has a confidence head (reading it waits for the draft: a cut needs its length on the host)."""
        threshold = self.policy.least_survival()
        if threshold <= 0.0 or block.confidence is None:
            return k
        return min(k, confident_length(float_list(block.confidence), threshold))


def load_state(target: LoadedModel, target_cache: CachedModel, path: Path) -> DSparkState:
    """The DSpark drafter in `path` bound to the target, with its side of the chat; one line if it does not fit the
    target or is a head SpecChat cannot run (`drafters/dspark.py`)."""
    return DSparkState(load_dspark_drafter_for(path, target.model, target.config, target.display_name), target_cache)


def make_drafter(given: MakerInputs) -> DSparkBlockDrafter:
    """The round's drafter for the pair's DSpark side of the chat."""
    return DSparkBlockDrafter(given.state(DSparkState), given.warper, given.policy)
