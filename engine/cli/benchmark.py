"""Measuring decoding modes against each other and against mlx-lm, as ratios within one process.

Absolute speeds say more about the machine than about the method, so every mode runs on the same prompts in the
same process, alternating (mode by mode within each prompt and iteration) after a warm-up, and each mode is
reported relative to standard decoding on the same prompt and iteration.

Speed is measured after each run's first round: prefill and the first pass differ between implementations
(prompt caching, queued first steps) in ways that have nothing to do with decoding, so tokens per second is
(tokens after the first round) / (time after the first round), for every mode alike.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import mlx.core as mx

from ..decoding.cached_model import default_prefill_step
from ..decoding.generation import generate_stream
from ..decoding.pair import ModelPair
from ..events import GenerationResult, RoundEvent
from ..params import GenerationParams

# mode -> (our settings, or None for an mlx-lm reference)
OUR_MODES: dict[str, dict[str, object]] = {
    "standard": {"mode": "standard"},
    "speculative": {"mode": "speculative", "drafter": "model", "adaptive": False},
    # The same without reading each draft token's p and q: what the speculation trace costs.
    "speculative-untraced": {"mode": "speculative", "drafter": "model", "adaptive": False, "trace_rounds": False},
    "adaptive": {"mode": "speculative", "drafter": "model", "adaptive": True},
    "prompt-lookup": {"mode": "speculative", "drafter": "lookup", "adaptive": True},
    "prompt-lookup-fixed": {"mode": "speculative", "drafter": "lookup", "adaptive": False},
    # Lookup in the context alone, not the history: what drafting from other conversations adds.
    "prompt-lookup-context": {"mode": "speculative", "drafter": "lookup", "adaptive": True, "history": False},
    "adaptive+lookup": {"mode": "speculative", "drafter": "model+lookup", "adaptive": True},
    # Automatic: each round the fastest of every drafter the pair has (lookup, a draft model, ...), or none.
    "automatic": {"mode": "speculative", "drafter": "auto", "adaptive": True},
    # SSD: every round pre-drafts the next (fixed K); speculative-ssd lets the switch choose SSD or synchronous
    # rounds at fixed K, adaptive-ssd the policy K and the switch SSD.
    "ssd": {"mode": "speculative", "drafter": "model", "adaptive": False, "ssd": True, "ssd_always": True},
    "speculative-ssd": {"mode": "speculative", "drafter": "model", "adaptive": False, "ssd": True},
    "adaptive-ssd": {"mode": "speculative", "drafter": "model", "adaptive": True, "ssd": True},
    # Lenient (lossy) acceptance at --lenience δ (0.5 if not given), otherwise as "speculative".
    "lenient": {"mode": "speculative", "drafter": "model", "adaptive": False},
}
DEFAULT_LENIENCE = 0.5
MLX_LM_MODES = ("mlx-lm-standard", "mlx-lm-speculative")
ALL_MODES = tuple(OUR_MODES) + MLX_LM_MODES
NEEDS_DRAFT = {"speculative", "speculative-untraced", "adaptive", "adaptive+lookup", "lenient", "ssd", "speculative-ssd", "adaptive-ssd",
               "mlx-lm-speculative"}
# What each of our modes is compared with among mlx-lm's.
MLX_LM_COUNTERPART = {"standard": "mlx-lm-standard", **{m: "mlx-lm-speculative" for m in OUR_MODES if m != "standard"}}


@dataclass
class Run:
    """One generation of one mode on one prompt."""

    mode: str
    prompt_index: int
    iteration: int
    tokens: int
    generation_tps: float
    acceptance_rate: float | None
    tokens_per_pass: float
    identical_to_standard: bool | None = None
    category: str = ""
    timed_tokens: int = 0  # the tokens and seconds tok/s is computed from (after the first round)
    timed_s: float = 0.0
    ssd: dict[str, float] | None = None  # SSD's counts: checked, hits, predrafted, wasted, hidden_draft_s
    drafted_by: dict[str, int] = field(default_factory=dict)  # draft tokens per drafter (Automatic's choices)
    token_ids: list[int] = field(default_factory=list, repr=False)
    text: str = field(default="", repr=False)

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out.pop("token_ids")
        out.pop("text")
        return out


@dataclass
class Measurement:
    """Raw observations of a run, before they are reduced to a `Run`."""

    token_ids: list[int]
    first_round_tokens: int
    first_round_end: float
    end: float
    drafted: int
    accepted: int
    rounds: int
    text: str = ""
    ssd: dict[str, float] | None = None
    drafted_by: dict[str, int] = field(default_factory=dict)

    @property
    def timed_tokens(self) -> int:
        return len(self.token_ids) - self.first_round_tokens

    def tps(self) -> float:
        seconds = self.end - self.first_round_end
        return self.timed_tokens / seconds if self.timed_tokens > 0 and seconds > 0 else 0.0


def measure_ours(pair: ModelPair, prompt: list[int] | list[dict[str, str]], params: GenerationParams,
                 system_prompt: str | None = None) -> Measurement:
    """Run our engine on token ids or a conversation, noting when its first round ended."""
    first_end, first_tokens = None, 0
    result = None
    for event in generate_stream(pair, prompt, params, system_prompt=system_prompt):
        if isinstance(event, RoundEvent) and first_end is None:
            first_end, first_tokens = time.perf_counter(), event.emitted
        elif isinstance(event, GenerationResult):
            result = event
    end = time.perf_counter()
    assert result is not None
    s = result.stats
    ssd = {"checked": s.ssd_checked, "hits": s.ssd_hits, "predrafted": s.predrafted, "wasted": s.predraft_wasted,
           "hidden_draft_s": s.hidden_draft_s} if params.ssd else None
    return Measurement(result.tokens, first_tokens, first_end or end, end, s.drafted, s.accepted, s.rounds, result.text, ssd,
                       dict(s.drafted_by))


def measure_mlx_lm(pair: ModelPair, prompt_ids: list[int], params: GenerationParams, speculative: bool) -> Measurement:
    """Run mlx-lm's own `stream_generate` on the same models, with the same sampler settings and K."""
    from mlx_lm.generate import stream_generate
    from mlx_lm.sample_utils import make_logits_processors, make_sampler

    if params.seed is not None:
        mx.random.seed(params.seed)
    kwargs: dict[str, Any] = {  # mlx-lm's stream_generate options, each of its own type
        "sampler": make_sampler(params.temperature, params.top_p, params.min_p, top_k=params.top_k),
        "logits_processors": make_logits_processors(
            repetition_penalty=params.repetition_penalty if params.repetition_penalty != 1.0 else None,
            repetition_context_size=params.repetition_context_size,
        ),
        "prefill_step_size": params.prefill_step_size or default_prefill_step(),
    }
    if speculative:
        assert pair.draft is not None
        kwargs.update(draft_model=pair.draft.model, num_draft_tokens=params.num_draft)
    tokens: list[int] = []
    from_draft: list[bool] = []
    first_end, first_tokens, finish = None, 0, None
    for response in stream_generate(
        pair.target.model, pair.tokenizer, mx.array(prompt_ids), max_tokens=params.max_tokens, **kwargs
    ):
        finish = response.finish_reason
        if finish == "stop":
            break  # the final response repeats the EOS token, which is not output
        tokens.append(response.token)
        from_draft.append(response.from_draft)
        if first_end is None and not response.from_draft:
            first_end, first_tokens = time.perf_counter(), len(tokens)
    end = time.perf_counter()
    rounds = sum(1 for d in from_draft if not d) or 1
    accepted = sum(from_draft)
    drafted = rounds * params.num_draft if speculative else 0
    return Measurement(tokens, first_tokens, first_end or end, end, drafted, accepted, rounds)


def _run(mode: str, pair: ModelPair, prompt_ids: list[int], params: GenerationParams) -> Measurement:
    pair.forget_history()  # every run is a first chat: an earlier run of the same prompt would be copied whole
    if mode in OUR_MODES:
        return measure_ours(pair, prompt_ids, mode_params(mode, params))
    return measure_mlx_lm(pair, prompt_ids, params, speculative=mode == "mlx-lm-speculative")


def mode_params(mode: str, params: GenerationParams) -> GenerationParams:
    """The settings one of our modes runs with: only the lenient mode is lossy, whatever --lenience says."""
    lenience = (params.lenience or DEFAULT_LENIENCE) if mode == "lenient" else 0.0
    return params.replace(**{"ssd": False, "ssd_always": False, **OUR_MODES[mode]}, lenience=lenience)


def to_run(mode: str, prompt_index: int, iteration: int, m: Measurement) -> Run:
    return Run(
        mode=mode,
        prompt_index=prompt_index,
        iteration=iteration,
        tokens=len(m.token_ids),
        generation_tps=m.tps(),
        acceptance_rate=(m.accepted / m.drafted) if m.drafted else None,
        tokens_per_pass=len(m.token_ids) / m.rounds if m.rounds else 0.0,
        timed_tokens=max(m.timed_tokens, 0),
        timed_s=m.end - m.first_round_end,
        token_ids=m.token_ids,
        text=m.text,
        ssd=m.ssd,
        drafted_by=m.drafted_by,
    )


def check_modes(modes: Iterable[str], has_draft: bool, conversation: bool = False) -> list[str]:
    """The modes to run, standard first, validated; raises ValueError naming what is wrong."""
    chosen = [m.strip() for m in modes if m.strip()]
    known = tuple(OUR_MODES) + (() if conversation else MLX_LM_MODES)
    unknown = [m for m in chosen if m not in known]
    if unknown:
        why = " (mlx-lm's modes take single prompts, not conversations)" if unknown[0] in MLX_LM_MODES else ""
        raise ValueError(f"Unknown benchmark mode {unknown[0]!r}{why}: choose from {', '.join(known)}.")
    if not has_draft:
        needing = [m for m in chosen if m in NEEDS_DRAFT]
        if needing:
            raise ValueError(f"Mode {needing[0]} needs a draft model: pass --draft MODEL or drop that mode.")
    return ["standard"] + [m for m in dict.fromkeys(chosen) if m != "standard"]


def add_pinned_mode(drafter: str) -> None:
    """A mode that pins a drafter kind registered for the benchmark (a scripted drafter), at the policy's K."""
    OUR_MODES[drafter] = {"mode": "speculative", "drafter": drafter, "adaptive": True}


def run_benchmark(
    pair: ModelPair,
    prompts: list[list[int]],
    modes: list[str],
    params: GenerationParams,
    iterations: int = 1,
    on_run: Callable[[Run], None] | None = None,
    categories: list[str] | None = None,
) -> list[Run]:
    """All modes on all prompts, alternating, after one warm-up run of each mode."""
    for mode in modes:
        _run(mode, pair, prompts[0], warm_up(params))
    runs: list[Run] = []
    for iteration in range(iterations):
        standard: dict[int, list[int]] = {}
        for index, prompt_ids in enumerate(prompts):
            for mode in modes:
                run = to_run(mode, index, iteration, _run(mode, pair, prompt_ids, params))
                run.category = categories[index] if categories else ""
                record(run, standard, params.greedy, runs, on_run)
    return runs


def warm_up(params: GenerationParams) -> GenerationParams:
    """The settings of a mode's untimed first run (MLX compiles and allocates on first use)."""
    return params.replace(max_tokens=min(params.max_tokens, 8))


def record(run: Run, standard: dict[int, list[int]], greedy: bool, runs: list[Run], on_run: Callable[[Run], None] | None) -> None:
    """Keep a run, noting (greedy) whether it is token-identical to standard decoding's run of the same prompt
    or turn; standard runs first, so its tokens are at hand."""
    if run.mode == "standard":
        standard[run.prompt_index] = run.token_ids
    if greedy:
        run.identical_to_standard = run.token_ids == standard.get(run.prompt_index)
    runs.append(run)
    if on_run:
        on_run(run)


def _paired_ratio(runs: list[Run], mode: str, reference: str) -> float | None:
    by_key = {(r.prompt_index, r.iteration): r for r in runs if r.mode == reference}
    ratios = [
        r.generation_tps / by_key[(r.prompt_index, r.iteration)].generation_tps
        for r in runs
        if r.mode == mode and r.generation_tps > 0
        and (r.prompt_index, r.iteration) in by_key and by_key[(r.prompt_index, r.iteration)].generation_tps > 0
    ]
    return statistics.median(ratios) if ratios else None


def summarize(runs: list[Run]) -> dict[str, dict[str, object]]:
    """Per mode: median tok/s, median paired speedup vs standard and vs mlx-lm, acceptance, tokens per pass.

    A run that generated too little to time (a sampled EOS first: tok/s 0) is left out of every figure and
    counted as `untimed_runs`: averaged in, two such runs of eight read as speculation halving tokens per pass.
    """
    summary: dict[str, dict[str, object]] = {}
    modes = list(dict.fromkeys(r.mode for r in runs))
    for mode in modes:
        every = [r for r in runs if r.mode == mode]
        mine = [r for r in every if r.generation_tps > 0] or every
        rates = [r.acceptance_rate for r in mine if r.acceptance_rate is not None]
        counterpart = MLX_LM_COUNTERPART.get(mode)
        identical = [r.identical_to_standard for r in mine if r.identical_to_standard is not None]
        summary[mode] = {
            "median_tps": statistics.median(r.generation_tps for r in mine),
            "speedup_vs_standard": _paired_ratio(runs, mode, "standard"),
            "ratio_vs_mlx_lm": _paired_ratio(runs, mode, counterpart) if counterpart in modes else None,
            "acceptance_rate": statistics.mean(rates) if rates else None,
            "tokens_per_pass": statistics.mean(r.tokens_per_pass for r in mine),
            "identical_to_standard": all(identical) if identical else None,
            "untimed_runs": len(every) - len([r for r in every if r.generation_tps > 0]),
        }
        summary[mode].update(_ssd_summary(every))
    return summary


def _ssd_summary(runs: list[Run]) -> dict[str, object]:
    """For SSD modes: the share of rounds whose draft was pre-drafted, and what pre-drafting wasted and hid."""
    counts = [r.ssd for r in runs if r.ssd is not None]
    if not counts:
        return {}
    total = {key: sum(c[key] for c in counts) for key in counts[0]}
    return {
        "fanout_hit_rate": total["hits"] / total["checked"] if total["checked"] else None,
        "predrafted_tokens": total["predrafted"],
        "predraft_wasted_share": total["wasted"] / total["predrafted"] if total["predrafted"] else None,
        "hidden_draft_s": total["hidden_draft_s"],
    }


def summarize_by_category(runs: list[Run]) -> dict[str, dict[str, dict[str, object]]]:
    """`summarize` within each prompt category (chat, code-editing, ...)."""
    categories = list(dict.fromkeys(r.category for r in runs if r.category))
    return {c: summarize([r for r in runs if r.category == c]) for c in categories}


@dataclass
class FollowUpTiming:
    """Time to first token of a chat's first turn and of a follow-up, with and without the prompt cache."""

    first_turn_ttft_s: float
    second_turn_ttft_s: float
    second_turn_uncached_ttft_s: float
    second_turn_prompt_tokens: int
    second_turn_cached_tokens: int


def measure_follow_up(pair: ModelPair, question: str, follow_up: str, params: GenerationParams) -> FollowUpTiming:
    """A two-turn chat: the second turn should only process what the first did not (prompt caching)."""
    pair.reset_caches()
    turn = [{"role": "user", "content": question}]
    first = _final(generate_stream(pair, turn, params))
    turn += [{"role": "assistant", "content": first.text}, {"role": "user", "content": follow_up}]
    second = _final(generate_stream(pair, turn, params))
    pair.reset_caches()
    uncached = _final(generate_stream(pair, turn, params))
    return FollowUpTiming(first.stats.ttft_s, second.stats.ttft_s, uncached.stats.ttft_s,
                          second.stats.prompt_tokens, second.stats.cached_prompt_tokens)


def _final(events) -> GenerationResult:
    result = None
    for event in events:
        result = event
    assert isinstance(result, GenerationResult)
    return result


def machine_info() -> dict[str, str]:
    """Where the numbers were measured: platform, MLX device, and on Linux which BLAS MLX's CPU backend got
    (the wheel's reference BLAS makes a K-token verify cost K+1 steps; OpenBLAS does not)."""
    import platform

    version = mx.__version__  # type: ignore[attr-defined]  # mlx.core sets it at import; its stubs leave it out
    info = {"platform": f"{platform.system()} {platform.machine()}", "mlx": version, "device": str(mx.default_device())}
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return info
    libraries = {line.split()[-1] for line in maps.splitlines() if ".so" in line}
    if any(re.search(r"/libopenblas[^/]*\.so", lib) for lib in libraries):
        info["blas"] = "OpenBLAS (preloaded)"
    elif any("mlx_cpu.libs/libblas" in lib for lib in libraries):
        info["blas"] = "reference BLAS (bundled with mlx[cpu])"
    return info


def format_table(summary: dict[str, dict[str, object]]) -> str:
    """The summary as an aligned text table."""

    def fmt(value: object, spec: str) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool):
            return "yes" if value else "NO"
        return format(value, spec)

    header = f"{'mode':<22}{'tok/s':>9}{'vs std':>9}{'vs mlx-lm':>11}{'accept':>9}{'tok/pass':>10}{'= greedy':>10}"
    lines = [header, "-" * len(header)]
    for mode, s in summary.items():
        label = f"{mode} (LOSSY {s['lenience']:g})" if s.get("lossy") else mode
        lines.append(
            f"{label:<22}{fmt(s['median_tps'], '.1f'):>9}{fmt(s['speedup_vs_standard'], '.2f'):>9}"
            f"{fmt(s['ratio_vs_mlx_lm'], '.2f'):>11}{fmt(s['acceptance_rate'], '.0%'):>9}"
            f"{fmt(s['tokens_per_pass'], '.2f'):>10}{fmt(s['identical_to_standard'], ''):>10}"
        )
    for mode, s in summary.items():
        if s.get("predrafted_tokens") is not None:
            hit, wasted = s["fanout_hit_rate"], s["predraft_wasted_share"]
            lines.append(f"{mode}: fan-out hit rate {fmt(hit, '.0%')}, {fmt(wasted, '.0%')} of {s['predrafted_tokens']} "
                         f"pre-drafted tokens unused, {s['hidden_draft_s']:.2f} s of drafting hidden")
    untimed = {mode: s["untimed_runs"] for mode, s in summary.items() if s.get("untimed_runs")}
    if untimed:
        lines.append("left out, too short to time: " + ", ".join(f"{n} run(s) of {mode}" for mode, n in untimed.items()))
    return "\n".join(lines)
