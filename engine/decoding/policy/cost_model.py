"""The cost model of docs/design.md, fitted to the rounds of one answer on this machine, and what it predicts elsewhere.

With per-token acceptance a, draft length K, draft cost c per token and verify time t(K+1), a round yields
E(K) = (1 - a^(K+1)) / (1 - a) tokens in K c + t(K+1) seconds. From an answer's rounds we measure a, c and the
line t(w) = t1 + slope (w - 1) (from rounds whose timings are their own: the host waited for the draft and the
verify pass was not queued by the round before), then predict tokens per second for each K and set it beside
what rounds of that K achieved. a is what the geometric model means by it, the chance that a draft token the
target reaches is accepted: accepted / (accepted + rejections), as the adaptive policy counts it. Accepted over
verified (the stats panel's figure) is lower, since it also counts the draft tokens after a rejection, which
the target never reaches; with it the model under-predicts every K.

The Apple GPU prediction keeps the measured acceptance (it depends on the models and the text, not the hardware)
and swaps the costs for a memory-bound GPU's: verifying K+1 tokens reads the weights once, v(K) = 1 + 0.04 K
target steps, and a draft step costs the draft's share of the bytes read (0 for prompt lookup). It is a
prediction, not a measurement.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ...events import RoundEvent
from .draft_length import expected_tokens

APPLE_GPU_VERIFY_SLOPE = 0.04  # extra target steps per verified draft token on a memory-bound GPU
MAX_K = 16


def best_speedup(acceptance: float, draft_cost: float, slope: float, max_k: int = MAX_K) -> tuple[int, float]:
    """(K, predicted speedup over standard decoding) at the best K, K = 0 (speedup 1) included; costs in target
    steps."""
    best = (0, 1.0)
    for k in range(1, max_k + 1):
        speedup = expected_tokens(acceptance, k) / (k * draft_cost + 1 + slope * k)
        if speedup > best[1]:
            best = (k, speedup)
    return best


def ssd_speedup(acceptance: float, draft_cost: float, slope: float, k: int, hit_rate: float, predrafted: float,
                overlap: float) -> float:
    """Predicted speedup over standard decoding of SSD rounds (costs in target steps).

    A synchronous round costs K c + v(K). An SSD round verifies while `predrafted` tokens (per round) are drafted
    beside it: the share `overlap` of that drafting uses capacity the verify leaves idle, the rest adds to the
    round; a miss (1 - hit rate) still drafts K tokens first. overlap 1 is the best case (a device with room
    to spare), 0 the worst (both compete for the same bandwidth, as on this CPU).
    """
    verify = 1 + slope * k
    side = predrafted * draft_cost
    seconds = max(verify, overlap * side) + (1 - overlap) * side + (1 - hit_rate) * k * draft_cost
    return expected_tokens(acceptance, k) / seconds


def pipelined_speedup(tokens_per_pass: float, pass_cost: float, latency: float) -> float:
    """Speculation's speedup over standard decoding when every target pass also waits `latency` (a pipeline
    across Macs: the head's message and the activations' hops), all in target steps of compute.

    A standard token costs 1 + L; a speculative round costs its pass (v(K) + K c) + L and yields E tokens, so
    the speedup is E (1 + L) / (pass_cost + L): E / v(K) on one machine, rising towards E as latency dominates.
    """
    return tokens_per_pass * (1 + latency) / (pass_cost + latency)


@dataclass
class CostModel:
    """The cost model of one answer.

    Attributes:
        acceptance: a, per draft token the target reached: accepted / (accepted + rejections).
        verified_acceptance: accepted / verified draft tokens (what the stats panel shows).
        step_s: t1, a plain target step.
        verify_slope_s: seconds each further verified token adds to a pass.
        draft_token_s: seconds per drafted token (0 for prompt lookup); with several drafters, each one's median
            weighted by its share of the drafted tokens.
        drafter_shares: each drafter's share of the drafted tokens ("model", "lookup").
        drafter_token_s: each drafter's own seconds per drafted token.
        measured_tps: per K the rounds used, tokens per second those rounds achieved.
        rounds_used: how many rounds had timings of their own.
        step_measured: t1 comes from plain rounds; False: no plain round was timed, and t1 is guessed as the
            quickest drafted pass over 1.5 (a verify of a few tokens costs about that much more than one step).
    """

    acceptance: float
    verified_acceptance: float
    step_s: float
    verify_slope_s: float
    draft_token_s: float
    measured_tps: dict[int, float] = field(default_factory=dict)
    drafter_shares: dict[str, float] = field(default_factory=dict)
    drafter_token_s: dict[str, float] = field(default_factory=dict)
    rounds_used: int = 0
    step_measured: bool = True

    @property
    def draft_cost(self) -> float:
        """c: a drafted token's cost in target steps."""
        return self.draft_token_s / self.step_s

    def verify_cost(self, k: int) -> float:
        """v(K): a pass over K+1 tokens in target steps."""
        return 1.0 + self.verify_slope_s * k / self.step_s

    def predicted_tps(self, k: int) -> float:
        """Tokens per second the model predicts for K on this machine (K = 0: standard decoding)."""
        if k == 0:
            return 1.0 / self.step_s
        return expected_tokens(self.acceptance, k) / (k * self.draft_token_s + self.step_s + self.verify_slope_s * k)

    def apple_gpu(self, draft_cost: float) -> tuple[int, float]:
        """(best K, predicted speedup) on a memory-bound Apple GPU, with a draft step costing `draft_cost` target
        steps there (the draft's share of the weights' bytes; 0 for prompt lookup)."""
        return best_speedup(self.acceptance, draft_cost, APPLE_GPU_VERIFY_SLOPE)


def fit(rounds: list[RoundEvent]) -> CostModel | None:
    """The cost model of an answer's rounds; None until there are plain and drafted rounds to fit it on."""
    timed = [r for r in rounds if r.timed and r.verify_s > 0]
    plain = [r.verify_s for r in timed if not r.drafted]
    drafted = [r for r in timed if r.drafted]
    verified = sum(r.drafted for r in rounds)
    if not drafted or not verified:
        return None
    step_s = statistics.median(plain) if plain else min(r.verify_s for r in drafted) / 1.5
    slope_s = max(0.0, statistics.median((r.verify_s - step_s) / len(r.draft) for r in drafted))
    shares, per_drafter = _drafters(rounds, drafted)
    draft_token_s = sum(shares[d] * per_drafter.get(d, 0.0) for d in shares)
    accepted = sum(r.accepted for r in rounds)
    rejections = sum(1 for r in rounds if r.accepted < r.drafted)
    return CostModel(
        acceptance=accepted / (accepted + rejections) if accepted + rejections else 0.0,
        verified_acceptance=accepted / verified,
        step_s=step_s,
        verify_slope_s=slope_s,
        draft_token_s=draft_token_s,
        measured_tps=_measured_by_k(rounds),
        drafter_shares=shares,
        drafter_token_s=per_drafter,
        rounds_used=len(timed),
        step_measured=bool(plain),
    )


def _drafters(rounds: list[RoundEvent], timed: list[RoundEvent]) -> tuple[dict[str, float], dict[str, float]]:
    """Each drafter's share of the drafted tokens, and its median seconds per token in its timed rounds.

    With drafts from both lookup and the model, one median over all rounds came out at lookup's 0: the card read
    "draft cost 0.00" and predicted 17 tok/s while the model drafted 6 of 14 rounds at 0.40-0.68 s each."""
    tokens: dict[str, int] = {}
    for r in rounds:
        if r.drafted:
            tokens[r.drafter] = tokens.get(r.drafter, 0) + r.drafted
    total = sum(tokens.values())
    shares = {d: n / total for d, n in tokens.items()}
    per_drafter = {d: statistics.median(r.draft_s / len(r.draft) for r in timed if r.drafter == d)
                   for d in shares if any(r.drafter == d for r in timed)}
    return shares, per_drafter


def _measured_by_k(rounds: list[RoundEvent]) -> dict[int, float]:
    """Per draft length, tokens emitted per second spent in the rounds of that length."""
    emitted: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for r in rounds:
        k = len(r.draft)
        emitted[k] = emitted.get(k, 0) + r.emitted
        seconds[k] = seconds.get(k, 0.0) + r.draft_s + r.verify_s
    return {k: emitted[k] / seconds[k] for k in sorted(emitted) if seconds[k] > 0}
