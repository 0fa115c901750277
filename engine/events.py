"""The event stream between the engine and its consumers (CLI, GUI, benchmark).

A generation yields, in order: for a prompt with images, one `ImagesRead`; `PrefillEvent`s while the prompt is
processed, then for each round the
`TokenEvent`s it emitted followed by its `RoundEvent`, and last one `GenerationResult`. Standard decoding
uses the same types (every token has origin "target" and every round drafts nothing), so a view needs no
second code path for the speculative/standard toggle.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol

from .drafter_kinds import drafters_named
from .part_stats import PartStats, split_rounds  # noqa: F401 - where the views read them from

Origin = Literal["accepted", "corrected", "bonus", "target"]
FinishReason = Literal["stop", "length", "cancelled", "context"]
Part = Literal["answer", "reasoning", "marker"]
"""Which part of a thinking model's output a token is (`decoding/reasoning.py`): the answer, the reasoning before it,
or a marker between them (`<think>`, `</think>`, the blank line after it), which is in neither part's text."""


@dataclass(frozen=True)
class PrefillEvent:
    """Prompt processing progress: `processed` of `total` prompt tokens are in `model`'s cache.

    `model` is "target" or "draft"; the draft prefills after the target when it will draft.
    """

    processed: int
    total: int
    model: str = "target"


@dataclass(frozen=True)
class ImagesRead:
    """A vision target's prompt holds images: the tokens each one became, in the prompt's order (the views show each
    as one collapsed span of that many tokens)."""

    tokens: tuple[int, ...]


@dataclass(frozen=True)
class TokenLogprob:
    """The target's log-probability of an emitted token, and of the likeliest tokens at its position.

    From the target's own distribution (log-softmax of its logits, before any sampling warp, penalty or
    output constraint), whoever drafted the token: the verify pass computed it anyway.

    Attributes:
        token: the emitted token's id.
        logprob: its natural log-probability.
        top: the `top` likeliest tokens at its position as (id, logprob), likeliest first.
    """

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class TokenEvent:
    """One emitted token.

    Attributes:
        token: the token id.
        text: its printable text; "" while it holds only part of a multi-byte character, whose text then
            arrives with the token that completes it.
        origin: "accepted" (a draft token the target accepted), "corrected" (the target's replacement after
            a rejection), "bonus" (the extra target token after a fully accepted round), "target" (standard
            decoding, or a speculative round that drafted nothing).
        round: index of the round (target pass) that emitted it, from 0.
        part: "answer", "reasoning" (a thinking model's thoughts) or "marker" (text "": a think marker).
        logprob: the target's log-probability of it (only when `GenerationParams.logprobs` asks for them).
    """

    token: int
    text: str
    origin: Origin
    round: int
    part: Part = "answer"
    logprob: TokenLogprob | None = None

    @property
    def reasoning(self) -> bool:
        return self.part == "reasoning"


class SSDFigures(Protocol):
    """A round's SSD figures, as a RoundEvent and the engine's Round both carry them (see `Draft`)."""

    @property
    def ssd_hit(self) -> bool | None: ...
    @property
    def predrafted(self) -> int: ...
    @property
    def predraft_wasted(self) -> int: ...
    @property
    def hidden_draft_s(self) -> float: ...


@dataclass(frozen=True)
class RoundEvent:
    """One target pass: what was drafted, what the rule decided about each draft token, and what each half cost.

    Attributes:
        round: index from 0.
        drafted: draft tokens verified (0 in standard decoding).
        accepted: draft tokens the target accepted.
        emitted: tokens this round added to the output (accepted + 1, fewer at the end of generation).
        drafter: the drafter (`drafter_kinds`) that drafted it ("model", "lookup", "mtp", "eagle3", "dflash"...) or "none".
        draft_s, verify_s: host seconds spent drafting and verifying. The draft model's work is queued, not
            waited for, so its device time mostly shows in verify_s, except in the rounds timed for the
            adaptive policy (a drafter's first three, then one in eight), which wait for the draft first.
        draft, draft_text: every token the drafter proposed (the K chosen), rejected ones included, and its text.
        p, q: per draft token, the target's and the draft's probability of it after warping (q is 1 for prompt
            lookup's point mass; greedy: p is 1 for the target's argmax, else 0).
        next_token: the correction, bonus or plain token the round ended with.
        predicted_tps, predicted_tps_plain: the adaptive policy's prediction, when it chose K, of tokens per second
            with that K and with K = 0 (None when it predicted nothing).
        timed: whether draft_s and verify_s measure the two apart (see draft_s).
        ssd_hit: with SSD, True when this round's draft was pre-drafted during the previous verify, False when
            it had been pre-drafted for other outcomes (a miss), None when nothing was pre-drafted for it.
        predrafted: tokens SSD pre-drafted for the next round while this round's verify ran.
        predraft_wasted: pre-drafted tokens this round's outcome left unused.
        hidden_draft_s: on a hit, the drafting time it hid behind the previous verify (sync cost per token x K).
        reasoning: most of the round's tokens were the model's thinking (its drafts guessed reasoning, not the answer).
        network_s: with the target across Macs, the seconds of this round the head spent in the pipeline's
            collectives (its message, the hops, waiting on the other Macs); None on one machine.
    """

    round: int
    drafted: int
    accepted: int
    emitted: int
    drafter: str
    draft_s: float
    verify_s: float
    draft: tuple[int, ...] = ()
    draft_text: tuple[str, ...] = ()
    p: tuple[float, ...] = ()
    q: tuple[float, ...] = ()
    next_token: int | None = None
    predicted_tps: float | None = None
    predicted_tps_plain: float | None = None
    timed: bool = False
    ssd_hit: bool | None = None
    predrafted: int = 0
    predraft_wasted: int = 0
    hidden_draft_s: float = 0.0
    reasoning: bool = False
    network_s: float | None = None

    @property
    def next_origin(self) -> Origin:
        """What the round's last token is: a "corrected" rejection, a "bonus" or a plain "target" token."""
        return "target" if not self.drafted else ("bonus" if self.accepted == self.drafted else "corrected")

    @property
    def rejected(self) -> int | None:
        """The draft token the target rejected (the one a correction replaced), if any."""
        return self.draft[self.accepted] if self.accepted < min(self.drafted, len(self.draft)) else None

    def accept_probabilities(self) -> list[float]:
        """min(1, p/q) for each draft token: the chance the rule gave it."""
        return [min(1.0, p / q) if q > 0 else 1.0 for p, q in zip(self.p, self.q)]

    def trace_record(self) -> dict[str, object]:
        """The round as one JSON Lines object (`specchat-cli generate --trace`, the app's trace export)."""
        return {
            "round": self.round,
            "drafter": self.drafter,
            "k": len(self.draft),
            "verified": self.drafted,
            "draft": list(self.draft),
            "draft_text": list(self.draft_text),
            "accepted": self.accepted,
            "next": self.next_token,
            "next_origin": self.next_origin,
            "rejected": self.rejected,
            "emitted": self.emitted,
            "p": list(self.p),
            "q": list(self.q),
            "accept_p": self.accept_probabilities(),
            "draft_s": self.draft_s,
            "verify_s": self.verify_s,
            "predicted_tps": self.predicted_tps,
            "predicted_tps_plain": self.predicted_tps_plain,
            "timed": self.timed,
            "ssd_hit": self.ssd_hit,
            "predrafted": self.predrafted,
            "predraft_wasted": self.predraft_wasted,
            "hidden_draft_s": self.hidden_draft_s,
            "reasoning": self.reasoning,
            "network_s": self.network_s,
        }


def lossy_label(lenience: float) -> str:
    """How every view names lenient acceptance: its output is not exactly the target's distribution."""
    return f"LOSSY (lenience {lenience:g})"


def trace_line(record: dict[str, object]) -> str:
    """One round's trace record as a line of the JSON Lines trace (the CLI's `--trace` and the app's export)."""
    return json.dumps(record, ensure_ascii=False) + "\n"


@dataclass
class PolicyBelief:
    """What the adaptive policy believes of one drafter at the end of an answer, and why it drafts or not.

    Attributes:
        drafter: the drafter ("model", "lookup", "lookup+copying", ...).
        acceptance: its estimated per-token acceptance rate.
        draft_cost_steps: its draft cost per token in target steps, a block drafter's (DFlash) per pass (None
            before one was measured).
        predicted_tps: predicted tokens per second for each K from 0 (plain steps) up, in a steady run of drafts.
        chosen_k: the K those predictions choose now (0: plain steps, the drafter only probed).
        reason: why, in one sentence.
        rounds_since_draft: rounds since it last drafted (a probe, when given up on); None if it never did.
        verified_tokens: its draft tokens the target has verified, ever.
    """

    drafter: str
    acceptance: float
    draft_cost_steps: float | None
    predicted_tps: list[float]
    chosen_k: int
    reason: str
    rounds_since_draft: int | None
    verified_tokens: int


@dataclass
class GenerationStats:
    """What a generation did and how fast, as docs/design.md ("Token origins and statistics") defines the numbers."""

    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    generated_tokens: int = 0
    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    prompt_s: float = 0.0
    generation_s: float = 0.0
    ttft_s: float = 0.0
    total_s: float = 0.0
    peak_memory_gb: float = 0.0
    ssd_checked: int = 0  # rounds whose draft SSD had pre-drafted outcomes for
    ssd_hits: int = 0  # of those, rounds whose outcome was among them
    predrafted: int = 0
    predraft_wasted: int = 0
    hidden_draft_s: float = 0.0
    ended_on_eos: bool = False  # the last pass produced the end-of-sequence token (not in the answer's tokens)
    drafted_by: dict[str, int] = field(default_factory=dict)  # draft tokens verified, per drafter that drafted them
    network_s: float | None = None  # across Macs: the rounds' seconds in the pipeline's collectives (None: one machine)
    policy: list[PolicyBelief] = field(default_factory=list)  # the adaptive policy's belief, per drafter
    thinking: PartStats = field(default_factory=PartStats)  # rounds mostly reasoning; seconds: the thinking
    answering: PartStats = field(default_factory=PartStats)  # rounds mostly answering

    def count_ssd(self, r: SSDFigures) -> None:
        """Add one round's SSD figures (a RoundEvent, or the engine's Round)."""
        self.ssd_checked += r.ssd_hit is not None
        self.ssd_hits += r.ssd_hit is True
        self.predrafted += r.predrafted
        self.predraft_wasted += r.predraft_wasted
        self.hidden_draft_s += r.hidden_draft_s

    @property
    def fanout_hit_rate(self) -> float | None:
        """SSD: the share of rounds whose draft was ready when they began (None without SSD)."""
        return self.ssd_hits / self.ssd_checked if self.ssd_checked else None

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_pass(self) -> float:
        """Tokens the target passes produced, the end-of-sequence token included: a pass that ends the answer
        produced one too, and without it an answer that drafted little read below 1 (0.93-0.99)."""
        return (self.generated_tokens + self.ended_on_eos) / self.rounds if self.rounds else 0.0

    @property
    def generation_tps(self) -> float:
        return self.generated_tokens / self.generation_s if self.generation_s > 0 else 0.0

    @property
    def network_share(self) -> float | None:
        """The share of the generation's time the head spent waiting on the network (None on one machine)."""
        if self.network_s is None or self.generation_s <= 0:
            return None
        return min(self.network_s / self.generation_s, 1.0)

    @property
    def prompt_tps(self) -> float:
        processed = self.prompt_tokens - self.cached_prompt_tokens
        return processed / self.prompt_s if self.prompt_s > 0 else 0.0

    def as_dict(self) -> dict[str, float | int | None]:
        """The stats as plain numbers, derived ones included (the CLI's `--json` contract)."""
        out: dict[str, float | int | None] = asdict(self)
        out.update(
            acceptance_rate=self.acceptance_rate,
            tokens_per_pass=self.tokens_per_pass,
            generation_tps=self.generation_tps,
            prompt_tps=self.prompt_tps,
            fanout_hit_rate=self.fanout_hit_rate,
            network_share=self.network_share,
        )
        return out


@dataclass
class GenerationResult:
    """The final event of a generation, also what `generate()` returns.

    `text` is the answer's token events' texts joined, plus whatever the detokenizer could only release at the end
    (a trailing space it held back, or replacement characters for a character the last tokens left
    incomplete): it always starts with the streamed text. A thinking model's reasoning is apart, in `reasoning`
    (its markers in neither); `tokens` and `origins` are every generated token's, and `parts` says which part each
    one is (empty: all answer).
    """

    text: str
    tokens: list[int]
    origins: list[Origin]
    mode: str
    finish_reason: FinishReason
    stats: GenerationStats = field(default_factory=GenerationStats)
    lenience: float = 0.0  # above 0: lenient acceptance, so the text is not exactly the target's distribution
    reasoning: str = ""
    parts: list[Part] = field(default_factory=list)
    stop_string: str | None = None  # the stop string that ended the text, if one did
    drafter: str = "none"  # the drafter asked for ("mtp", "model+lookup", ...); "none" in standard decoding

    @property
    def lossy(self) -> bool:
        return self.lenience > 0

    @property
    def answer_tokens(self) -> list[int]:
        """The ids of the answer alone (what a later turn's history holds of it)."""
        if not self.parts:
            return list(self.tokens)
        return [token for token, part in zip(self.tokens, self.parts) if part == "answer"]

    def split_summary(self) -> str:
        """Speculation while thinking and while answering, apart ('' without reasoning)."""
        if not self.reasoning:
            return ""
        s = self.stats
        return f"while thinking {s.thinking.speculation()}; while answering {s.answering.speculation()}"

    def summary(self) -> str:
        """One line for a person, e.g. '71.0 tok/s, 78% of 412 drafted tokens accepted (built-in MTP drafter), ...'."""
        s = self.stats
        parts = [f"{s.generation_tps:.1f} tok/s"]
        who = drafters_named(s.drafted_by, self.drafter)  # the drafter explains the numbers: name it
        # Automatic's choice and why; with nothing drafted it is the choice for what follows, not this answer's
        reasons = [f"Automatic{'' if s.drafted else ' from here'}: {b.reason}" for b in s.policy[:1] if b.drafter == "auto"]
        if s.drafted:
            parts += [f"{s.acceptance_rate:.0%} of {s.drafted} drafted tokens accepted ({who})", f"{s.tokens_per_pass:.1f} tokens per pass"]
        elif self.mode != "speculative":
            parts.append("standard decoding")
        else:  # Automatic is no drafter ("by the Automatic"): its reason, when it gave one, says what it chose
            parts.append(f"no tokens drafted by the {who}" if self.drafter != "auto" else
                         "no tokens drafted" + ("" if reasons else " under Automatic"))
        parts += reasons
        parts.append(f"{s.generated_tokens} tokens, first after {s.ttft_s:.2f} s")
        if s.ssd_checked:
            parts.append(f"SSD: {s.fanout_hit_rate:.0%} of drafts ready, {s.predraft_wasted} of {s.predrafted} pre-drafted tokens unused")
        if s.network_share:
            parts.append(f"network {s.network_share:.0%} of the time ({s.network_s:.2f} s)")
        if self.lossy:
            parts.append(lossy_label(self.lenience))
        if self.reasoning and s.drafted:
            parts.append(self.split_summary())
        return ", ".join(parts)

    def as_dict(self) -> dict[str, object]:
        return {
            "text": self.text,
            "reasoning": self.reasoning,
            "tokens": list(self.tokens),
            "origins": list(self.origins),
            "mode": self.mode,
            "drafter": self.drafter,
            "finish_reason": self.finish_reason,
            "lenience": self.lenience,
            "lossy": self.lossy,
            "stats": self.stats.as_dict(),
        }


Event = ImagesRead | PrefillEvent | TokenEvent | RoundEvent | GenerationResult
