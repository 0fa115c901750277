"""Drafting with a DFlash (or DFlash2) block drafter, from the tapped layers' outputs the target's own passes computed.

A DFlash drafter (`drafters/dflash.py`) attends to the target's states at every context position before the last
token, as keys and values of its own cache, and drafts a whole block after that token in one pass: 15 tokens for
z-lab's block of 16. The round verifies the first K of them (`--num-draft K`, K = 15 the whole block), K chosen by
the adaptive policy from the acceptance it measures at each block position (`policy/draft_length.py`: a block costs one pass
whatever K).

`DFlashState` hears every target pass (prefill chunks, plain steps, verify passes) through
`CachedModel.listener`, with each tapped layer's output (`LayerTap(i)`), and hands the drafter the states of the
positions it lacks. A position's state depends on the ids up to it alone, so the drafter's cache stays valid up
to the first id where the context departs from what it was built from: the round's verdict (a rejected draft
token's state is never fed), a Regenerate or an edit rewind it there, and nothing else does. Positions whose ids
are known when heard (a prefill chunk, a plain step) go into the drafter's cache at once, all but the latest,
which waits for the next block pass as z-lab's loop feeds it (a sliding-window layer keeps one position more
that way); the states of a verify pass wait for the verdict in a `HiddenStore`.

At T > 0 the block is sampled from the drafter's own warped distributions, q (DFlash: all positions at once;
DFlash2: step by step along its selector's path), and the round's exact rejection rule takes them; greedy drafts
are the argmax, as z-lab drafts them.
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx

from ...drafters.dflash import DFlashRunner, load_drafter_for
from ...drafters.dflash_model import Chooser
from ...models.loading import LoadedModel
from .. import clock
from ..cached_model import CachedModel, common_prefix_length
from ..hidden_states import LayerTap
from ..policy.draft_length import DraftPolicy
from ..sampling import Warper
from .drafter import NO_DRAFT, Draft
from .drafter_state import AttachedStates
from .maker import MakerInputs
from .network_drafter import NetworkDrafter

SOURCE = "dflash"


class DFlashState(AttachedStates):
    """A chat's DFlash side: the drafter's cache of context, which target positions it holds, and the states heard
    but not fed yet.

    Args:
        runner: the drafter bound to the target (`drafters/dflash.load_drafter_for`).
        target: the target's cache, whose passes it hears while attached.

    Attributes:
        base: the target position of the drafter's first cached position (0 unless it started over after a gap).
        ids: the context ids the positions held were computed from: context[: base + runner.length].
    """

    def __init__(self, runner: DFlashRunner, target: CachedModel) -> None:
        super().__init__(target)
        self.runner = runner
        self.taps = tuple(LayerTap(layer) for layer in runner.config.target_layer_ids)
        self.reset()

    @property
    def block_tokens(self) -> int:
        """Draft tokens one block pass proposes: the most a round can verify."""
        return self.runner.max_draft

    @property
    def end(self) -> int:
        """The target position after the last one the drafter holds."""
        return self.base + self.runner.length

    def reset(self) -> None:
        """Forget every position held and every state stored."""
        self.runner.reset()
        self.store.clear()
        self.base = 0
        self.ids: list[int] = []

    # --- listening to the target -------------------------------------------------------------------------

    def heard(self, position: int, states: list[mx.array]) -> None:
        """Store a pass's states; cache those of known ids at once, all but the latest (see the module doc)."""
        self.follow_images()
        self.store.put(position, mx.concatenate(states, axis=-1))
        self.heard_passes = self.target.passes
        tokens = self.target.tokens  # a prefix of the context being answered: rejected drafts are rewound by now
        self._follow(tokens)
        self._advance(tokens, len(tokens) - 1)
        self.runner.absorb()

    @property
    def state(self) -> list[mx.array]:
        """The drafter's cache, evaluated with each prefill chunk."""
        return [a for c in self.runner.cache if c.keys is not None for a in (c.keys, c.values)]

    def forget_from(self, position: int) -> None:
        """Forget the states at `position` and after, and the drafter's positions built from them."""
        self.store.keep_before(position)
        self._rewind_to(position)

    # --- holding the context -----------------------------------------------------------------------------

    def prepare(self, context: list[int]) -> bool:
        """Make the drafter hold the target's states of every position of `context` but the last; False when they
        are not at hand (passes it did not hear: it drafts again once it has heard the target's next pass)."""
        last = len(context) - 1
        self.store.keep_before(common_prefix_length(self.target.tokens, context))
        self._follow(context)
        self._rewind_to(last)  # a Regenerate: the context ends before what the drafter holds
        self._advance(context, last)
        return self.end == last and self.runner.length > 0

    def _follow(self, ids: list[int]) -> None:
        """Rewind to where `ids` depart from the ids the positions held were computed from (not where they end)."""
        valid = common_prefix_length(self.ids, ids)
        if valid < min(len(self.ids), len(ids)):
            self._rewind_to(valid)

    def _rewind_to(self, length: int) -> None:
        """Hold the positions before `length` only."""
        if length >= self.end:
            return
        if length <= self.base:
            self.runner.reset()
            self.base = length
        else:
            self.runner.rewind(length - self.base)
        self.ids = self.ids[:length]

    def _advance(self, ids: list[int], upto: int) -> None:
        """Queue the stored states of the positions up to `upto` (exclusive) the drafter lacks; after a gap in
        what it heard, its context starts over from the states stored."""
        if self.end >= upto:
            return
        rows = self.store.rows(self.end, upto)
        if rows is None and self.store.start < upto <= self.store.end:
            self.runner.reset()
            self.base = self.store.start
            rows = self.store.rows(self.base, upto)
        if rows is None:
            return
        self.runner.feed(rows[None])
        self.ids = list(ids[:upto])
        self.store.drop_before(upto)


class DFlashBlockDrafter(NetworkDrafter):
    """Proposes the first K tokens of a block the DFlash drafter drafts in one pass, with the q each was drawn from.

    Args:
        state: the chat's DFlash side (`load_state`'s, which the pair keeps).
        warper: the sampling warp shared with the target.
        policy: chooses how many of the block's tokens to verify.
    """

    def __init__(self, state: DFlashState, warper: Warper, policy: DraftPolicy) -> None:
        super().__init__(warper, policy, SOURCE)
        self.state = state

    def propose(self, context: list[int], limit: int, split_pass: bool = False) -> Draft:
        k = self._last_k = self.policy.choose(self.source, min(limit, self.state.block_tokens), split_pass)
        if not k:
            return NO_DRAFT
        start = clock.now()
        if not self.state.prepare(context):
            return NO_DRAFT
        timed = self._next_timed()
        ids, probs = self._block(context, k)
        draft = Draft(ids, int(ids.shape[0]), probs, self.source, timed=timed)
        if timed:
            mx.eval(draft.tokens)
        draft.draft_s = clock.now() - start
        return draft

    def _block(self, context: list[int], k: int) -> tuple[mx.array, mx.array | None]:
        """The first k ids of the block after `context`, and the q each was drawn from (None when greedy): the
        whole block is drafted, its positions seeing each other, and the rest of it dropped."""
        block = self.state.runner.draft(context[-1], choose=self._chooser(context), position=len(context))
        return block.ids[:k], None if block.probs is None else block.probs[:k]

    def _chooser(self, context: list[int]) -> Chooser | None:
        """How the drafter picks its tokens: argmax without a warp to apply (greedy, no penalty or bias, as z-lab
        drafts), otherwise the target's warp over its logits (the penalties seeing the context), q returned when sampling."""
        if self.warper.greedy and not self.warper.adjusts_logits:
            return None
        history = mx.array(context, dtype=mx.uint32) if self.warper.adjusts_logits else None

        def choose(logits: mx.array, position: int) -> tuple[mx.array, mx.array | None]:
            rows = self.warper.fit_width(logits)
            if history is not None:
                rows = self.warper.adjust_logits(rows, history, None)
            return self.warper.choose(rows, position)

        return choose

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        """Nothing to do here: the verified states arrive with the target's passes, and the next context says
        which of them stand (the next block pass feeds them)."""


def load_state(target: LoadedModel, target_cache: CachedModel, path: Path) -> DFlashState:
    """The DFlash drafter in `path` bound to the target, with its side of the chat; one line if it does not fit the
    target (`drafters/dflash_pairing.py`)."""
    return DFlashState(load_drafter_for(path, target.model, target.config, target.display_name), target_cache)


def make_drafter(given: MakerInputs) -> DFlashBlockDrafter:
    """The round's drafter for the pair's DFlash side of the chat."""
    return DFlashBlockDrafter(given.state(DFlashState), given.warper, given.policy)
