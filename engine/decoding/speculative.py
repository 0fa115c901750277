"""The speculative round: draft, verify in one target pass, accept by rejection sampling, rewind.

Why that is exact, and what each step must keep for it: docs/design.md, "The round".

`SpeculativeDecoder.round` is the whole algorithm on one screen; the helpers below it are bookkeeping:

    1. a drafter proposes up to K tokens (a draft model or the target's MTP head with their q's, or prompt lookup
       with point masses);
    2. the target runs once over [last token, d_1..d_K] and gives p_1..p_{K+1};
    3. `acceptance` keeps a prefix of the draft and adds one correction or bonus token;
    4. the caches rewind on their own: each `CachedModel` knows the ids it holds, and the next round's
       context shares exactly the accepted prefix with them.

The round reads the device once: the draft stays lazy, the verify pass is built on it, and one read fetches
the draft ids with the verdict (and, when asked for, the target's log-probabilities of the emitted tokens, from
the same verify rows: `logprobs.py`).

Under an output constraint (`constraint.py`) the round does three things more, all on the host's grammar state:
a draft is cut at the first token the grammar forbids (prompt lookup's; the draft model drafts under the
constraint already), the verify rows are masked position by position along the draft, and the emitted tokens
are committed to the grammar. Plain rounds then choose their token from a masked head, after the previous
token is read.

A round that drafts nothing is a plain target step. Plain rounds are pipelined like standard decoding: the
next target pass (the "head", p_1 of the next round) is queued before the current token is read, so an
adaptive policy that settles on K = 0 costs what standard decoding costs. If the next round drafts after
all, the queued head supplies its p_1 and the verify pass covers only the draft tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mlx.core as mx

from ..arrays import float_list, int_list
from . import clock
from . import logprobs as logprob_package
from .acceptance import Verdict, point_mass, verify_coupled, verify_greedy, verify_sampled
from .cached_model import CachedModel
from .constraint import Constraint, restrict
from .drafting.drafter import NO_DRAFT, Draft, Drafter
from .policy.draft_length import DraftPolicy
from .policy.estimates import RoundCosts
from .rounds import Round, round_origins
from .sampling import Warper

# The most context tokens a pass takes along before its own: after a model with recurrent state returns to a
# checkpoint, the accepted drafts are fed again with the next pass instead of in a pass of their own.
REFEED_TAIL = 80


class SpeculativeDecoder:
    """Runs speculative rounds for one generation.

    Args:
        target: the target model and its cache.
        warper: the sampling warp, shared by draft and target.
        policy: chooses each round's draft length.
        drafters: asked in order each round; the first draft offered is verified (prompt lookup goes before
            the draft model: its drafts are free).
        trace: read p(d) and q(d) of every draft token with the verdict (the speculation trace).
        lenience: δ of the lenient, lossy acceptance rule (0: exact).
        logprobs: None, or how many alternatives to report with each emitted token's log-probability.
        constraint: the grammar the output must follow (None: free text).
    """

    def __init__(
        self, target: CachedModel, warper: Warper, policy: DraftPolicy, drafters: Sequence[Drafter], trace: bool = True,
        lenience: float = 0.0, logprobs: int | None = None, constraint: Constraint | None = None,
    ) -> None:
        self.target = target
        self.warper = warper
        self.policy = policy
        self.drafters = list(drafters)
        self.trace = trace
        self.lenience = lenience
        self.logprobs = logprobs
        self.constraint = constraint
        self._head: mx.array | None = None  # queued (1, V) logits for the next position
        self._head_token: mx.array | None = None  # queued choice from them, for a next round that drafts nothing
        self._head_read: mx.array | None = None  # what a plain round reads of that choice (with its logprobs)

    def start(self, context: list[int]) -> None:
        """Begin a generation after `context` (already prefilled into the target)."""
        self._head = self._head_token = self._head_read = None
        for drafter in self.drafters:
            drafter.start(context)

    def round(self, context: list[int], budget: int) -> Round:
        """One round after `context`, emitting at most `budget` tokens."""
        split_pass = self._head is not None  # a plain round queued the target's next pass
        draft, masks = self._propose(context, min(budget - 1, self.policy.max_draft), split_pass)  # 1. draft
        prediction = self.policy.last_prediction
        if not draft.count:
            return self._plain(context, budget, prediction)
        start = clock.now()
        rows, fed, timed = self._verify_pass(context, draft)  # 2. the target's p_1..p_{K+1}, one pass
        verdict = self._accept(rows if masks is None else restrict(rows, masks), draft, context)  # 3. the rule (lazy)
        predrafted = sum(d.speculate(context, draft, verdict) for d in self.drafters)  # SSD: the next round, meanwhile
        read = _read(draft, verdict, self.trace, self._logprob_rows(rows, draft, verdict))  # the round's one device read
        verify_s = clock.now() - start
        self.target.resolve(fed + read.ids)  # 4. the caches now hold the draft; the next round rewinds them
        emitted = read.ids[: read.accepted] + [read.next_id]
        if self.constraint is not None:
            self.constraint.advance(emitted)
        self._settle(draft, read.ids, read.accepted, verify_s if timed else None, max(len(fed), 1) + draft.count)
        return Round(
            tokens=read.ids[: read.accepted] + [read.next_id],
            origins=round_origins(draft.count, read.accepted),
            drafted=draft.count,
            accepted=read.accepted,
            drafter=draft.drafter,
            draft_s=draft.draft_s,
            verify_s=verify_s,
            draft_ids=read.ids,
            p=read.p,
            q=read.q,
            predicted_tps=prediction[0] if prediction else None,
            predicted_tps_plain=prediction[1] if prediction else None,
            timed=timed,
            ssd_hit=draft.ssd_hit,
            predrafted=predrafted,
            predraft_wasted=draft.predraft_wasted,
            hidden_draft_s=draft.hidden_draft_s,
            logprobs=logprob_package.unpack(read.logprobs, emitted, self.logprobs) if self.logprobs is not None else [],
        )

    def _propose(self, context: list[int], limit: int, split_pass: bool) -> tuple[Draft, mx.array | None]:
        """The first draft a drafter offers (NO_DRAFT if none) and, under a constraint, its verify rows' masks."""
        if limit > 0:
            for drafter in self.drafters:
                draft = drafter.propose(context, limit, split_pass)
                masks = None
                if draft.count and self.constraint is not None:
                    kept, masks = self.constraint.masks_along(draft.ids if draft.ids is not None else int_list(draft.tokens))
                    draft, masks = draft.cut(kept), masks[: kept + 1]
                if draft.count:
                    return draft, masks
        return NO_DRAFT, None

    def _logprob_rows(self, rows: mx.array, draft: Draft, verdict: Verdict) -> mx.array | None:
        """The logprobs of each verify row's emitted token (the draft token, or at row n the next token), lazy."""
        if self.logprobs is None:
            return None
        positions = mx.arange(draft.count + 1)
        drafted = mx.concatenate([draft.tokens.astype(mx.uint32), mx.zeros((1,), dtype=mx.uint32)])
        chosen = mx.where(positions == verdict.accepted, verdict.next_token.astype(mx.uint32), drafted)
        return logprob_package.package(rows, chosen, self.logprobs)

    def _verify_pass(self, context: list[int], draft: Draft) -> tuple[mx.array, list[int], bool]:
        """Queue the target's pass over the draft: (K+1, V) logits, the context ids fed with the draft, and
        whether the pass's time is the verify's alone (a queued head was paid for by the previous round)."""
        if self._head is not None:
            self.target.checkpoint_round()
            rows = mx.concatenate([self._head, self.target.forward(draft.tokens)])
            self._head = self._head_token = None
            return rows, [], False
        tail = self.target.catch_up(context, max_tail=REFEED_TAIL)
        self.target.checkpoint_round()
        inputs = mx.concatenate([mx.array(tail, dtype=mx.uint32), draft.tokens])
        return self.target.forward(inputs)[-(draft.count + 1) :], tail, draft.timed

    def _accept(self, rows: mx.array, draft: Draft, context: list[int]) -> Verdict:
        """The verdict on the draft, lazy, by the rule of `acceptance.py`."""
        if self.warper.adjusts_logits:
            rows = self.warper.adjust_logits(rows, mx.array(context, dtype=mx.uint32), draft.tokens)
        if self.warper.greedy:
            return verify_greedy(mx.argmax(rows, axis=-1).astype(mx.uint32), draft.tokens, self.lenience)
        q = draft.probs if draft.probs is not None else point_mass(draft.tokens, self.warper.vocab_size)
        if self.warper.coupled:
            choices, logprobs = self.warper.choose(rows, position=len(context))
            assert logprobs is not None  # a sampling warper's (greedy returned above)
            return verify_coupled(choices, logprobs, q, draft.tokens)
        return verify_sampled(self.warper.logprobs(rows), q, draft.tokens, self.lenience)

    def _settle(self, draft: Draft, ids: list[int], accepted: int, verify_s: float | None, width: int) -> None:
        """Tell the drafters the verdict and the policy what the round cost (`width`: tokens the pass read)."""
        for drafter in self.drafters:
            drafter.settle(draft, ids, accepted)
        draft_token_s = (draft.draft_s - draft.catch_up_s) / draft.count if draft.timed else None
        self.policy.observe(RoundCosts(draft.source, draft.count, accepted, draft_token_s, verify_s, width))

    def _choose(self, head: mx.array, context: list[int]) -> mx.array:
        """The next token from the target's (1, V) logits after `context` (masked under a constraint)."""
        if self.constraint is not None:
            head = restrict(head, self.constraint.mask())
        if self.warper.adjusts_logits:
            head = self.warper.adjust_logits(head, mx.array(context, dtype=mx.uint32), None)
        return self.warper.choose(head, position=len(context))[0]

    def _queue_head(self, token: mx.array, position: int) -> None:
        """Queue the target's pass after `token`, and (without penalties or a bias, which need the context) the choice from it.

        As in standard decoding, what the next round reads must be an array queued here: on MLX's CPU backend a
        choice built after this queue waits behind it, and reading it then cost 11 ms a step on SmolLM2.
        """
        self._head = self.target.forward(token)[-1:]
        if self.warper.adjusts_logits or self.constraint is not None:  # the choice needs `token` on the host first
            mx.async_eval(token, self._head)
            return
        self._head_token = self.warper.choose(self._head, position)[0]
        self._head_read = logprob_package.with_token(self._head, self._head_token, self.logprobs)
        mx.async_eval(token, self._head_read)

    def _plain(self, context: list[int], budget: int, prediction: tuple[float, float] | None = None) -> Round:
        """A target step with nothing drafted, the next step queued first when the next round looks plain too."""
        start = clock.now()
        head, token, readable = self._head, self._head_token, self._head_read
        width = 1
        if head is None:
            tail = self.target.catch_up(context, max_tail=REFEED_TAIL)
            head = self.target.forward(mx.array(tail, dtype=mx.uint32), ids=tail)[-1:]
            width = len(tail)
        self._head = self._head_token = self._head_read = None
        if token is None or readable is None:
            token = self._choose(head, context)
            readable = logprob_package.with_token(head, token, self.logprobs)
        if budget > 1 and all(drafter.idle for drafter in self.drafters):
            self._queue_head(token, position=len(context) + 1)
        token_id, logprobs = logprob_package.read_token(readable, self.logprobs)
        if self._head is not None:
            self.target.resolve([token_id])
        if self.constraint is not None:
            self.constraint.advance([token_id])
        verify_s = clock.now() - start
        for drafter in self.drafters:
            drafter.settle(NO_DRAFT, [], 0)
        self.policy.observe(RoundCosts("none", 0, 0, 0.0, verify_s, width))
        plain = prediction[1] if prediction else None
        # Pipelined or not, a plain round's time is one target step (what the policy learns from too).
        return Round([token_id], ["target"], 0, 0, "none", 0.0, verify_s, predicted_tps=plain, predicted_tps_plain=plain,
                     timed=True, logprobs=logprobs)


@dataclass
class _Read:
    """A round's verdict as read from the device."""

    ids: list[int]
    accepted: int
    next_id: int
    p: list[float]
    q: list[float]
    logprobs: list[float]  # the logprob package's values (logprobs.py), empty when not asked for


def _read(draft: Draft, verdict: Verdict, trace: bool, logprobs: mx.array | None = None) -> _Read:
    """The one device read of a round: draft ids, the verdict, (for the trace) p(d) and q(d), and the logprob
    package when asked for, as one array.

    Floats carry the ids exactly (float32 holds whole numbers up to 2**24, beyond any vocabulary)."""
    k = draft.count
    parts = [draft.tokens, verdict.accepted, verdict.next_token]
    values = [mx.reshape(a, (-1,)).astype(mx.float32) for a in parts]
    if trace:
        values += [verdict.p_draft.astype(mx.float32), verdict.q_draft.astype(mx.float32)]
    if logprobs is not None:
        values.append(logprobs)
    read = float_list(mx.concatenate(values))
    ids = [int(x) for x in read[:k]]
    accepted, next_id = int(read[k]), int(read[k + 1])
    traced = 2 * k if trace else 0
    p, q = (read[k + 2 : 2 * k + 2], read[2 * k + 2 : 3 * k + 2]) if trace else ([], [])
    return _Read(ids, accepted, next_id, p, q, read[k + 2 + traced :])
