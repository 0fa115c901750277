"""Drafting with the target's built-in MTP head, from the hidden states its own passes already computed.

Entry t of the head pairs the target's hidden state at position t with the token at t + 1 (`drafters/mtp.py`).
A round after `context` (n tokens) needs entries up to n - 2, whose last output drafts token n; the target has
computed every state that needs (its passes stop one token short of the context: the last token goes in with
the next verify). So the head never asks the target for anything: `MTPState` listens to the target's passes
(`CachedModel.listener`), keeps their states until they are read (`HiddenStore`), and feeds them in with the
next draft's first pass. Draft tokens after the first chain on the head's own output and are entries of a guess,
dropped before the next round feeds the verified states; the target's verdict reaches the head as the context
it drafts after, whose common prefix with what the head has read says which entries still hold.

During a prefill the head reads each chunk as it comes (the chunk's ids are known) and keeps only the last
KEPT_STATES states, so a long prompt costs the head its own cache and no more. A chat's head state lives in the
pair across answers like a prompt cache; an answer that ran without it (standard decoding, another drafter)
leaves a gap, after which the head starts over from the states it hears again.

EAGLE-3's drafter pairs its entries the same way and chains the same way, so it runs on this bookkeeping too
(`eagle3.py`): its runner `project`s each pass's three tapped states into one state per position.
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx

from ...drafters.mtp import MTPRunner
from ...drafters.mtp_loading import load_mtp_head
from ...models.loading import LoadedModel
from .. import clock
from ..cached_model import CachedModel, common_prefix_length
from ..hidden_states import LAST_POST_NORM, LayerTap
from ..policy.draft_length import DraftPolicy
from ..sampling import Warper
from .drafter import NO_DRAFT, Draft
from .drafter_state import AttachedStates
from .maker import MakerInputs
from .network_drafter import NetworkDrafter, draft_steps

SOURCE = "mtp"
# Target states kept after the head has read them: an edit or a Regenerate changes the token after a position the
# target will not run again, and that entry is read again from its kept state (a Regenerate goes back to the
# prompt's end: answers shorter than this). About 10 kB a position on a 27B model in bfloat16.
KEPT_STATES = 4096


class MTPState(AttachedStates):
    """The head's cache, what it was built from, and the target states not read yet: a chat's MTP side.

    Args:
        runner: the head bound to the target.
        target: the target's cache, whose passes it listens to while attached.
        hidden: which target state the head reads: after the final norm (MTPLX, vLLM; the default, which parity
            with MTPLX checks) or before it (`LAST_PRE_NORM`, mlx-lm #990).
    """

    def __init__(self, runner: MTPRunner, target: CachedModel, hidden: LayerTap = LAST_POST_NORM) -> None:
        super().__init__(target)
        self.runner = runner
        self.taps = (hidden,)
        self.reset()

    def read(self, hidden: LayerTap) -> None:
        """Read the target's state `hidden` from now on (the pre-/post-norm switch); entries start over."""
        self.taps = (hidden,)
        self.reset()

    def reset(self) -> None:
        """Forget every entry and stored state."""
        self.runner.reset()
        self.store.clear()
        self.base = 0  # the target position of the head's first entry
        self.committed = 0  # entries built from verified states (the rest of the cache is a draft's chain)
        self.ids: list[int] = []  # the ids those entries read: context[: base + committed + 1]
        self._last: tuple[int, mx.array] | None = None  # (entry position, its output) of the latest entry fed

    # --- listening to the target -------------------------------------------------------------------------

    def heard(self, position: int, states: list[mx.array]) -> None:
        """Keep a pass's states; when its ids are known (a prefill chunk, a plain step) read them right away."""
        self.follow_images()
        self.store.put(position, self.runner.project(states))
        self.heard_passes = self.target.passes
        if not self.target.pending:
            self._advance(self.target.tokens, len(self.target.tokens) - 2)

    @property
    def state(self) -> list[mx.array]:
        """The head's cache, evaluated with each prefill chunk."""
        return [a for c in self.runner.cache if c.keys is not None for a in (c.keys, c.values)]

    def forget_from(self, position: int) -> None:
        """Forget the states at `position` and after, and the entries that read them (entry t reads state t)."""
        self.store.keep_before(position)
        self._rewind(max(0, min(self.committed, position - self.base)))

    # --- reading states ----------------------------------------------------------------------------------

    def prepare(self, context: list[int]) -> mx.array | None:
        """The head's (1, H) output at entry len(context) - 2, which drafts the token after `context`; None when
        the target state it needs is not at hand (a Regenerate's first round, before the target's next pass)."""
        last = len(context) - 2
        if last < 0:
            return None
        self.store.keep_before(common_prefix_length(self.target.tokens, context))
        self._advance(context, last)
        if self._last is not None and self._last[0] == last:
            return self._last[1]
        if self.base + self.committed == last + 1 and self.store.rows(last, last + 1) is not None:
            self._rewind(self.committed - 1)  # that entry's output is gone: read its state again
            self._advance(context, last)
            return self._last[1] if self._last is not None else None
        return None

    def _advance(self, ids: list[int], upto: int) -> None:
        """Feed entries up to position `upto` (pairing each state with the next id of `ids`) from the store."""
        self._keep_valid(ids)
        start = self.base + self.committed
        if start > upto:
            return
        rows = self.store.rows(start, upto + 1)
        if rows is None and self.store.start <= upto < self.store.end:
            self.runner.reset()  # a gap: start over from the states held (attention sees the head's entries since)
            self.base, self.committed, self._last = self.store.start, 0, None
            start = self.base
            rows = self.store.rows(start, upto + 1)
        if rows is None:
            return
        outputs = self.runner.feed(rows, mx.array(ids[start + 1 : upto + 2], dtype=mx.uint32))
        self.committed += upto + 1 - start
        self.ids = list(ids[: upto + 2])
        self._last = (upto, outputs[-1:])
        self.store.drop_before(upto + 1 - KEPT_STATES)

    def _keep_valid(self, ids: list[int]) -> None:
        """Drop the draft's chained entries, and the verified ones that read ids other than `ids`."""
        valid = common_prefix_length(self.ids, ids)
        self._rewind(max(0, min(self.committed, valid - 1 - self.base)))

    def _rewind(self, committed: int) -> None:
        self.committed = committed
        self.runner.rewind(committed)
        self.ids = self.ids[: self.base + committed + 1] if committed else self.ids[: self.base]
        if self._last is not None and self._last[0] >= self.base + committed:
            self._last = None


class MTPDrafter(NetworkDrafter):
    """Proposes tokens with the target's MTP head: K steps, the first from the target's states, each keeping
    the distribution it sampled from (the exact rejection rule needs q at T > 0).

    Args:
        state: the chat's MTP side (`load_state`'s, which the pair keeps), or another head that chains on its own outputs
            (EAGLE-3's, `eagle3.py`).
        warper: the sampling warp shared with the target.
        policy: chooses how many tokens to draft.
        source: the policy's and the events' name for the drafter.
    """

    def __init__(self, state: MTPState, warper: Warper, policy: DraftPolicy, source: str = SOURCE) -> None:
        super().__init__(warper, policy, source)
        self.state = state

    def propose(self, context: list[int], limit: int, split_pass: bool = False) -> Draft:
        k = self._last_k = self.policy.choose(self.source, limit, split_pass)
        if not k:
            return NO_DRAFT
        start = clock.now()
        output = self.state.prepare(context)
        if output is None:
            return NO_DRAFT
        timed = self._next_timed()
        history = mx.array(context, dtype=mx.uint32) if self.warper.adjusts_logits else None
        chain = _Chain(self.state.runner, output)
        tokens, probs, _ = draft_steps(chain, self.warper, history, self.state.runner.logits(output), k, len(context))
        draft = Draft(tokens, k, probs, self.source, timed=timed)
        if timed:
            mx.eval(draft.tokens)
        draft.draft_s = clock.now() - start
        return draft

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        """Nothing to do here: the verified states arrive with the target's passes, and the next context says
        which of them stand (the next draft feeds them in its first pass)."""


def load_state(target: LoadedModel, target_cache: CachedModel, path: Path | None = None) -> MTPState:
    """The target's built-in MTP head with its side of the chat (it is not in mlx-lm's model: read from the target's
    own weights; `path` is unused), or one line saying why the target has none."""
    head = load_mtp_head(target.path, target.model, target.config)
    return MTPState(MTPRunner(head, target.model), target_cache)


def make_drafter(given: MakerInputs) -> MTPDrafter:
    """The round's drafter for the MTP head's side of the chat (`load_state`'s, which the pair keeps)."""
    return MTPDrafter(given.state(MTPState), given.warper, given.policy)


class _Chain:
    """The head's later draft steps, as `draft_steps` calls a model: each token goes in with the previous output."""

    def __init__(self, runner: MTPRunner, output: mx.array) -> None:
        self.runner = runner
        self.output = output

    def forward(self, token: mx.array) -> mx.array:
        self.output = self.runner.feed(self.output, token)
        return self.runner.logits(self.output)
