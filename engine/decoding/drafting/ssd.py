"""Speculative speculative decoding (SSD, seed 001; Kumar, Dao, May, ICLR 2026): draft the next round while
the target verifies this one.

After a round's verify pass is queued, `SsdDrafter.speculate` guesses how the verdict will come out: the
`SSD_LENGTHS` most likely accepted lengths n (from the policy's acceptance estimate a: all K accepted has
probability a^K, a rejection at n+1 has a^n (1 - a)), and for each the `fanout` tokens the round most likely
ends with (the draft's top tokens at position n+1, the rejected draft token excluded). For each such outcome
it forks the draft model's cache (`CachedModel.fork`, sharing the cached keys), feeds the outcome, and drafts
K tokens on a stream of its own, so the device can run them beside the verify pass. When the verdict is read
and the next round asks for a draft, a pre-draft whose outcome is the context's end is a hit: its fork becomes
the draft model's cache and its tokens are verified with no drafting wait. A miss drafts as usual.

The verify rule is unchanged and every pre-drafted token was sampled from the draft's q given exactly the
context it is verified after, so the output is distributed exactly as the target's (greedy: token-identical).

Pre-drafting costs draft passes that a miss throws away. Where the device has no idle capacity during the
verify (this CPU backend), they only slow it down, so `SsdSwitch` measures tokens per second of SSD rounds and
of synchronous rounds and keeps the faster, trying the other now and then at a bounded cost. `ssd_always`
(the benchmark's ssd mode) pre-drafts every round, to measure SSD itself.

Only draft models whose caches are plain KV caches can fork; others draft synchronously.

SSD drafts ahead for the draft model's plain drafter (`draft_model.py`, whose maker chooses SSD or not) and knows
it only as the `PlainDrafts` it asks for a draft on a miss.
"""

from __future__ import annotations

import statistics
import threading
from collections import deque
from dataclasses import dataclass
from typing import Protocol

import mlx.core as mx

from ...arrays import int_item, int_list
from .. import clock
from ..acceptance import Verdict
from ..cached_model import CachedModel
from ..policy.draft_length import DraftPolicy
from ..sampling import Warper
from .drafter import NO_DRAFT, Draft
from .network_drafter import draft_steps

SSD_LENGTHS = 2  # accepted lengths pre-drafted for, the most likely first
PROBE_EVERY = 32  # rounds at least between tries of the mode the switch does not prefer
PROBE_LOSS = 0.03  # the most of the time those tries may cost
RATE_SAMPLES = 9  # rounds per mode whose median tokens per second the switch compares
LEARN_ROUNDS = 1  # rounds each mode runs before the switch compares them (later tries add samples)

_streams = threading.local()


def side_stream() -> mx.Stream:
    """The stream pre-drafts run on: one per thread that speculates (MLX streams belong to their thread)."""
    if not hasattr(_streams, "stream"):
        _streams.stream = mx.new_stream(mx.default_device())
    return _streams.stream


def likely_lengths(acceptance: float, k: int, count: int = SSD_LENGTHS) -> list[int]:
    """The `count` accepted lengths (0..k) most likely under a per-token acceptance rate, most likely first."""
    chance = [acceptance**n * (1 - acceptance) for n in range(k)] + [acceptance**k]
    return sorted(range(k + 1), key=lambda n: -chance[n])[:count]


def outcome_candidates(row: mx.array, fanout: int, rejected: mx.array | None) -> mx.array:
    """The `fanout` tokens the draft ranks highest at a position (lazy), the rejected draft token excluded:
    a correction is never the token it replaces."""
    scores = row.reshape(-1)
    if rejected is not None:
        scores = mx.where(mx.arange(scores.shape[0]) == rejected.astype(mx.int32), -mx.inf, scores)
    return mx.argsort(-scores)[:fanout].astype(mx.uint32)


class SsdSwitch:
    """Chooses SSD or synchronous rounds by their measured tokens per second (lives with the pair's policy).

    After LEARN_ROUNDS of each, it runs the faster and tries the other now and then, spaced so that those tries
    cost at most about PROBE_LOSS of the time: a mode five times slower is tried once in ~133 rounds."""

    def __init__(self) -> None:
        self.rates: dict[bool, deque[float]] = {True: deque(maxlen=RATE_SAMPLES), False: deque(maxlen=RATE_SAMPLES)}
        self.measured = 0  # rounds recorded, over every answer
        self._since_probe = 0

    def use_ssd(self) -> bool:
        ssd, sync = self.rates[True], self.rates[False]
        if len(ssd) < LEARN_ROUNDS or len(sync) < LEARN_ROUNDS:
            return len(ssd) < LEARN_ROUNDS
        ssd_rate, sync_rate = statistics.median(ssd), statistics.median(sync)
        prefer = ssd_rate >= sync_rate
        ratio = max(ssd_rate, sync_rate) / max(min(ssd_rate, sync_rate), 1e-9)
        self._since_probe += 1
        if self._since_probe >= max(PROBE_EVERY, (ratio - 1) / PROBE_LOSS):
            self._since_probe = 0
            return not prefer
        return prefer

    def record(self, ssd: bool, tokens: int, seconds: float) -> None:
        if seconds > 0:
            self.rates[ssd].append(tokens / seconds)
            self.measured += 1


class PlainDrafts(Protocol):
    """What SSD drafts with on a miss and pre-drafts like: a drafter of K tokens on demand from a cached model."""

    cached: CachedModel
    warper: Warper
    policy: DraftPolicy
    source: str

    def start(self, context: list[int]) -> None: ...

    def draft_chosen(self, context: list[int], k: int, keep_rows: bool = False) -> Draft: ...

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None: ...


@dataclass
class _PreDraft:
    """One outcome's pre-draft: after `base` context tokens, n accepted draft tokens and the token `ending`."""

    base: int
    accepted: int
    ending: mx.array  # (1,) the guessed correction or bonus
    twin: CachedModel
    draft: Draft


class SsdDrafter:
    """The draft model, drafting the next round during each verify pass (see the module docstring).

    Args:
        sync: the draft model's plain drafter, which drafts on a miss (its cache, warp, policy and name are SSD's).
        fanout: outcomes pre-drafted per accepted length.
        switch: chooses SSD or synchronous rounds, kept with the pair (None: every round pre-drafts, the
            benchmark's ssd mode).
    """

    def __init__(self, sync: PlainDrafts, fanout: int, switch: SsdSwitch | None = None) -> None:
        self.source = sync.source
        self.sync = sync
        self.cached, self.warper, self.policy = sync.cached, sync.warper, sync.policy
        self.fanout = fanout
        self.switch = switch
        self._pending: list[_PreDraft] = []
        self._round_start: float | None = None
        self._last_round_ssd = False
        self._last_emitted = 0
        self._last_k = 0
        self._ssd_round = False
        self._accepted, self._rejected = 0.0, 0.0  # acceptance counts, for guessing outcomes
        self._draft_cost: deque[float] = deque(maxlen=RATE_SAMPLES)  # synchronous seconds per draft token

    def start(self, context: list[int]) -> None:
        self.sync.start(context)
        self._pending = []
        self._round_start = None

    @property
    def idle(self) -> bool:
        return self._last_k == 0

    def propose(self, context: list[int], limit: int, split_pass: bool = False) -> Draft:
        pending, self._pending = self._pending, []
        self._time_round(pending)
        k = self._last_k = self.policy.choose(self.source, limit, split_pass)
        if not k:
            return NO_DRAFT
        self._ssd_round = self._wanted()  # decided now: only an SSD round pays for the draft's last row
        hit = self._take_hit(pending, context, k)
        draft = hit or self.sync.draft_chosen(context, k, keep_rows=self._ssd_round)
        if hit is None and pending:
            draft.ssd_hit = False
        if draft.timed and hit is None:
            self._draft_cost.append((draft.draft_s - draft.catch_up_s) / k)
        draft.predraft_wasted = sum(p.draft.count for p in pending) - (hit.count if hit else 0)
        return draft

    def _take_hit(self, pending: list[_PreDraft], context: list[int], k: int) -> Draft | None:
        """The pre-draft for the outcome the context ends with, as a draft of at most `k` tokens."""
        for pre in pending:
            if len(context) == pre.base + pre.accepted + 1 and context[-1] == int_item(pre.ending):
                ids = int_list(pre.draft.tokens)  # ready or nearly: the verify pass needs them anyway
                pre.twin.resolve((context + ids)[len(pre.twin.tokens) :])  # what it fed while only lazily known
                self.cached.adopt(pre.twin)
                n = min(k, len(ids))
                rows = pre.draft.rows[: n + 1] if pre.draft.rows is not None else None
                probs = pre.draft.probs[:n] if pre.draft.probs is not None else None
                saved = n * statistics.median(self._draft_cost) if self._draft_cost else 0.0
                return Draft(mx.array(ids[:n], dtype=mx.uint32), n, probs, self.source, fed=0, rows=rows, ssd_hit=True,
                             hidden_draft_s=saved)
        return None

    def speculate(self, context: list[int], draft: Draft, verdict: Verdict) -> int:
        """Start the verify pass, then pre-draft the next round for the likely outcomes; tokens pre-drafted."""
        rows = draft.rows if draft.source == self.source and self._ssd_round else None
        self._last_round_ssd = rows is not None
        if rows is None:
            return 0
        mx.async_eval(verdict.accepted, verdict.next_token)  # the verify pass goes first
        acceptance = (self._accepted + 1) / (self._accepted + self._rejected + 2)
        base, k = len(context), draft.count
        with mx.stream(side_stream()):
            for n in likely_lengths(acceptance, k):
                rejected = draft.tokens[n] if n < k else None
                candidates = outcome_candidates(rows[n], self.fanout, rejected)
                for j in range(min(self.fanout, candidates.shape[0])):
                    pre = self._pre_draft(context, draft, base, n, candidates[j : j + 1], k)
                    if pre is None:
                        self._pending = []
                        return 0
                    self._pending.append(pre)
        return sum(p.draft.count for p in self._pending)

    def _pre_draft(self, context: list[int], draft: Draft, base: int, n: int, ending: mx.array, k: int) -> _PreDraft | None:
        twin = self.cached.fork(base + n)
        if twin is None:
            return None
        history = None
        if self.warper.adjusts_logits:
            history = mx.concatenate([mx.array(context, dtype=mx.uint32), draft.tokens[:n], ending])
        logits = twin.forward(ending)
        tokens, probs, rows = draft_steps(twin, self.warper, history, logits, k, len(context) + n + 1, keep_rows=True)
        mx.async_eval(tokens)
        return _PreDraft(base, n, ending, twin, Draft(tokens, k, probs, self.source, fed=k, rows=rows))

    def _wanted(self) -> bool:
        return self.switch.use_ssd() if self.switch is not None else True

    def _time_round(self, pending: list[_PreDraft]) -> None:
        """Credit the round that just ended with its tokens per second, for the switch. An SSD round ends when its
        pre-drafts are done too: left running, their cost would land on the next round, whatever its mode."""
        if self.switch is None:
            return
        if pending:
            mx.eval([p.draft.tokens for p in pending])
        now = clock.now()
        if self._round_start is not None and self._last_emitted:
            self.switch.record(self._last_round_ssd, self._last_emitted, now - self._round_start)
        self._round_start = now

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        self._last_emitted = accepted + 1 if draft.count else 0
        if not draft.count:
            self._round_start = None  # a plain round between: the next SSD round is timed afresh
        elif draft.source == self.source:
            self._accepted += accepted
            self._rejected += accepted < draft.count
        self.sync.settle(draft, ids, accepted)
