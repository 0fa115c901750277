"""Each drafter on an Apple GPU: its draft cost c as measured here, with the acceptance its authors published.

Nothing here ran on Apple hardware, and no trained drafter weights can be downloaded on these machines, so the
acceptance of MTP heads, EAGLE-3, DFlash and DSpark cannot be measured here. What can be measured is what a draft
costs (c, in target steps: `tests/benchmarks/drafter_cost.py`, `dflash_cost.py`, `dspark_cost.py`, or the rounds of
the answer on screen). Acceptance depends on the models and the text, not the hardware, so a published acceptance
length carries over; on an Apple GPU decoding is memory-bound and a verify of K+1 tokens reads the weights once,
v(K) = 1 + 0.04 K target steps. The cost model (docs/design.md, "The cost model") then predicts

    speedup = tau / (passes * c + v(K)),

tau the published tokens per verify (accepted drafts + 1, "acceptance length"), K the draft tokens each round of
that publication verified, passes the drafter's passes per round: K for a drafter that drafts one token a pass
(MTP, EAGLE-3), 1 for one that drafts a block in one pass (DFlash, DSpark). A prediction from published
acceptance, not a measurement here.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ...drafter_kinds import kind
from ...events import RoundEvent
from .cost_model import APPLE_GPU_VERIFY_SLOPE, CostModel

LABEL = "prediction from published acceptance, not measured here"
THIS_ANSWER = "this answer"  # where c was measured when the drafter drafted in the answer on screen


@dataclass(frozen=True)
class PublishedAcceptance:
    """An acceptance length its source published for a drafter.

    Attributes:
        tokens_per_verify: tau, the mean tokens a verify pass yielded (accepted drafts + 1).
        k: the draft tokens each round verified.
        block: the drafter drafts all K in one pass (its registry row's `block`); False: one pass per draft token.
        setting: the pair, hardware and settings it was measured with.
        source: where it was published.
    """

    tokens_per_verify: float
    k: int
    block: bool
    setting: str
    source: str

    @property
    def passes(self) -> int:
        """The drafter's passes per round."""
        return 1 if self.block else self.k


@dataclass(frozen=True)
class MeasuredCost:
    """A draft cost measured on this machine: c in target steps per drafter pass, and what it was measured on."""

    c: float
    setting: str


# Per drafter: the acceptance length published for it, and its draft cost as measured on this machine.
FIGURES: dict[str, tuple[PublishedAcceptance, MeasuredCost]] = {
    "mtp": (
        PublishedAcceptance(1.85, 1, kind("mtp").block, "DeepSeek-V3's MTP module, 85-90% of second tokens accepted",
                            "DeepSeek-V3 Technical Report, arXiv 2412.19437, section 5.4.3"),
        MeasuredCost(0.30, "tiny Qwen3.5 hybrid target, bound by per-call overhead (drafter_cost.py)")),
    "eagle3": (
        PublishedAcceptance(2.77, 7, kind("eagle3").block, "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, MT-bench, K = 7, T = 1 (3.49 "
                            "HumanEval, 3.34 GSM8K)", "nebius/EAGLE3-Llama-3.3-70B-Instruct's model card"),
        MeasuredCost(0.10, "random target of Qwen3-0.6B's shape, float32 (drafter_cost.py)")),
    "dflash": (
        PublishedAcceptance(7.3, 15, kind("dflash").block, "Qwen3.6-27B bf16 on an M3 Ultra, block 16: 12.6 -> 42.3 tok/s (3.37x)",
                            "a published MLX trial, as issue 23 cites it"),
        MeasuredCost(0.31, "one block pass, random pair in Qwen3-8B's proportions at width 512 (dflash_cost.py)")),
    "dspark": (
        PublishedAcceptance(3.37, 7, kind("dspark").block, "deepseek-ai/dspark_qwen3_8b_block7 with Qwen3-8B on an M4 Pro, 7 drafts "
                            "(2.19x measured there)", "mlx-dspark 0.20.3's README"),
        MeasuredCost(0.31, "one block pass, random pair in Qwen3-8B's proportions at width 512 (dspark_cost.py)")),
}
PUBLISHED: dict[str, PublishedAcceptance] = {drafter: figures[0] for drafter, figures in FIGURES.items()}
MEASURED_COST: dict[str, MeasuredCost] = {drafter: figures[1] for drafter, figures in FIGURES.items()}


@dataclass(frozen=True)
class Prediction:
    """One drafter's predicted speedup over standard decoding on an Apple GPU.

    Attributes:
        drafter: its name ("mtp", "eagle3", ...).
        speedup: tau / (passes c + v(K)).
        c: the draft cost used, in target steps per drafter pass.
        cost_setting: where c was measured ("this answer", or the benchmark's setting).
        published: the acceptance it was predicted from.
    """

    drafter: str
    speedup: float
    c: float
    cost_setting: str
    published: PublishedAcceptance

    @property
    def measured_here(self) -> bool:
        """Whether c comes from the answer on screen (not from the benchmark)."""
        return self.cost_setting == THIS_ANSWER


def predicted_speedup(published: PublishedAcceptance, c: float, slope: float = APPLE_GPU_VERIFY_SLOPE) -> float:
    """tau / (passes c + v(K)), v(K) = 1 + slope K: every cost in target steps."""
    return published.tokens_per_verify / (published.passes * c + 1 + slope * published.k)


def costs_in_answer(model: CostModel, rounds: list[RoundEvent]) -> dict[str, float]:
    """c per drafter pass, for each drafter timed in an answer: its seconds per draft token over a target step,
    times its mean draft length for a drafter that drafts a block in one pass."""
    costs = {}
    for drafter, token_s in model.drafter_token_s.items():
        c = token_s / model.step_s
        published = PUBLISHED.get(drafter)
        if published is not None and published.block:
            c *= statistics.mean(len(r.draft) for r in rounds if r.drafter == drafter and r.draft)
        costs[drafter] = c
    return costs


def predictions(measured_here: dict[str, float] | None = None) -> list[Prediction]:
    """Every drafter with a published acceptance length, with c measured in this answer where it drafted here
    (`measured_here`, per pass) and the benchmark's c otherwise."""
    measured_here = measured_here or {}
    out = []
    for drafter, published in PUBLISHED.items():
        if drafter in measured_here:
            c, setting = measured_here[drafter], THIS_ANSWER
        else:
            c, setting = MEASURED_COST[drafter].c, MEASURED_COST[drafter].setting
        out.append(Prediction(drafter, predicted_speedup(published, c), c, setting, published))
    return out
