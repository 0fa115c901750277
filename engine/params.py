"""Generation settings: one frozen dataclass, validated when made, with named presets.

The same settings drive standard and speculative decoding; `mode` and `drafter` only choose how tokens are
proposed, never which distribution they come from.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from . import drafter_kinds
from .errors import InvalidParameterError

Mode = Literal["speculative", "standard"]

MODES: tuple[str, ...] = ("speculative", "standard")
KV_BITS: tuple[int | None, ...] = (None, 8, 4)
MAX_TOP_LOGPROBS = 20  # OpenAI's limit on top_logprobs
# The valid range of each bounded whole-number setting, (lowest, highest; None for no upper bound). The
# settings dialog's spin boxes take their limits from here.
RANGES: dict[str, tuple[int, int | None]] = {
    "num_draft": (1, 64),
    "max_draft": (1, 64),
    "top_k": (0, None),
    "max_tokens": (1, None),
    "repetition_context_size": (1, None),
    "prefill_step_size": (1, None),
    "fanout": (1, 8),
}
LEFT_TO_THE_DEVICE = ("prefill_step_size",)  # whole-number settings whose None means the device's own


@dataclass(frozen=True)
class GenerationParams:
    """How to generate.

    Attributes:
        mode: "speculative" drafts and verifies; "standard" runs the target alone (the toggle's baseline).
        drafter: where drafts come from, one of `drafter_kinds.names()`: "auto" (Automatic, the default: each round the
            drafter the pair has that the adaptive policy predicts fastest, or none; `decoding/drafting/automatic.py`), a draft
            "model", prompt "lookup" (n-gram matches in the context, no draft model needed), "model+lookup" (lookup when it finds a match, the model otherwise) or "mtp"
            (the target's built-in MTP head, for targets that ship one: Qwen3.5/3.6, Qwen3-Next, MiMo), "eagle3"
            (an EAGLE-3 drafter loaded as the pair's draft: `--draft` naming a speculators folder), "dflash" (a
            z-lab DFlash/DFlash2 block drafter loaded as the draft; K is how much of its block is verified) or
            "dspark" (a DeepSeek DSpark drafter loaded as the draft: K Markov steps of its block, which its
            confidence head may cut shorter under the adaptive policy).
        num_draft: the draft length K of every round when not adaptive (and of the first, learning round when
            adaptive).
        adaptive: choose each round's K from measured acceptance and costs, K = 0 when speculation loses.
        max_draft: with `adaptive`, the most a round may draft. Prompt lookup's drafts cost nothing, so a long
            copy of the input can pay for long rounds.
        temperature, top_p, top_k, min_p: the sampling warp, applied alike to draft and target
            (temperature 0 is greedy; top_p 1, top_k 0 and min_p 0 switch a filter off).
        repetition_penalty, repetition_context_size: mlx-lm's sign-aware penalty over the last tokens.
        presence_penalty, frequency_penalty: OpenAI's additive penalties (mlx-lm's processors), -2 to 2, 0 off:
            a token's logit less the first for being among the last `repetition_context_size` tokens, less the
            second for each time it is.
        logit_bias: (token id, bias from -100 to 100) pairs added to the target's and draft's logits alike (OpenAI's
            logit_bias); a dict is taken too. Ids the model does not have are refused when it generates.
        max_tokens: the most tokens to generate.
        seed: a seeded answer repeats exactly, whatever K the adaptive policy picks and whichever drafter runs:
            each position's token is the target's own draw with noise from the seed and the position (sampling.py;
            the same text standard decoding writes with that seed). None: MLX's random generator as it is, and
            drafts accepted by the rejection rule, which keeps more of them. Lenience > 0 is not coupled: its
            seeded runs repeat with a fixed K only.
        stop: strings that end generation; the text stops before them.
        prefill_step_size: prompt tokens per forward pass while prefilling (at the prompt's start; fewer as the
            context grows, so each pass costs about the same: `cached_model.prefill_chunk_length`). None: the
            device's own, 512 on a GPU and 128 on the CPU, where a Stop then waits a quarter as long for the same
            reading time (`cached_model.default_prefill_step`).
        trace_rounds: read each draft token's p(d) and q(d) with the round's verdict, for the speculation trace
            (off only to measure what the trace costs).
        kv_bits: store full-attention keys and values in 8 or 4 bits (None: full precision), for long chats
            in less memory. Draft and target use the same caches in every mode, so speculation stays exact
            with respect to the quantized target.
        ssd: speculative speculative decoding (seed 001): the draft model drafts the next round for the likely
            outcomes while the target verifies (`decoding/drafting/ssd.py`), in the rounds where that measures faster.
        fanout: with `ssd`, the outcomes pre-drafted per likely accepted length.
        ssd_always: with `ssd`, pre-draft every round, faster or not (to measure SSD itself: the benchmark's
            ssd mode).
        lenience: δ in [0, 1] (seed 002's --delta): accept a draft token with probability
            min(1, p / ((1 - δ) q)). 0 is the exact rule; above 0 the output is LOSSY, no longer distributed as
            the target's; 1 accepts every draft token.
        history: lookup also drafts from the user's other conversations (saved chats, earlier answers), not only
            from the context (off: what a chat drafts depends on it alone; the benchmark's prompt-lookup-context).
        think: a thinking model thinks before it answers; off, its template's no-think prompt (`enable_thinking`
            False) asks it to answer at once. Models that do not think, or whose template has no switch, ignore it.
        logprobs: None for none; N (0 to MAX_TOP_LOGPROBS) for each emitted token's log-probability under the
            target and the N likeliest tokens at its position (read with the round's verdict, `decoding/logprobs.py`).
        json_schema: the text of a JSON Schema the answer must follow ('{"type": "object"}' for any JSON object),
            enforced on draft and target alike (`decoding/constraint.py`); None for free text.
        grammar: a Lark grammar (llguidance's dialect, or its JSON of several) the answer must follow instead,
            enforced the same way (a freeform tool's input, e.g. Codex's apply_patch, or the envelope of calls to
            such tools); None for free text.
    """

    mode: Mode = "speculative"
    drafter: str = "auto"
    num_draft: int = 4
    adaptive: bool = True
    max_draft: int = 16
    temperature: float = 0.6
    top_p: float = 0.9
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    repetition_context_size: int = 20
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    logit_bias: tuple[tuple[int, float], ...] = ()
    max_tokens: int = 512
    seed: int | None = None
    stop: tuple[str, ...] = ()
    prefill_step_size: int | None = None
    kv_bits: int | None = None
    trace_rounds: bool = True
    lenience: float = 0.0
    ssd: bool = False
    fanout: int = 3
    ssd_always: bool = False
    history: bool = True
    think: bool = True
    logprobs: int | None = None
    json_schema: str | None = None
    grammar: str | None = None

    def __post_init__(self) -> None:
        for problem in _problems(self):
            raise InvalidParameterError(problem)
        if not isinstance(self.stop, tuple):
            object.__setattr__(self, "stop", tuple(self.stop))
        if isinstance(self.logit_bias, dict):  # hashable, in one order: the settings key the adaptive policy is kept by
            object.__setattr__(self, "logit_bias", tuple(sorted(self.logit_bias.items())))

    def replace(self, **changes: Any) -> GenerationParams:
        """A copy with some settings changed (validated like a new one)."""
        return dataclasses.replace(self, **changes)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def uses_draft_model(self) -> bool:
        """Whether a separate draft model is among the drafters."""
        return "model" in self._drafters_run

    @property
    def looks_up(self) -> bool:
        """Whether lookup is among the drafters (alone, or before the draft model)."""
        return "lookup" in self._drafters_run

    @property
    def _drafters_run(self) -> tuple[str, ...]:
        """The drafters the chosen one runs (a combination's parts)."""
        return drafter_kinds.kind(self.drafter).runs

    @property
    def drafts_from_history(self) -> bool:
        """Whether answers with these settings draft from the saved chats (so a loaded pair should index them)."""
        return self.history and self.mode == "speculative" and self.looks_up

    @property
    def lossy(self) -> bool:
        """Whether the output may differ from the target's distribution (lenient acceptance while speculating)."""
        return self.lenience > 0 and self.mode == "speculative"

    @property
    def applied_lenience(self) -> float:
        """The lenience an answer runs with: 0 unless it is lossy (standard decoding has nothing to accept)."""
        return self.lenience if self.lossy else 0.0

    # Presets, as in seed 000: named starting points for the GUI and the CLI.
    @classmethod
    def preset(cls, name: str, **overrides: Any) -> GenerationParams:
        try:
            base = PRESETS[name]
        except KeyError:
            raise InvalidParameterError(
                f"Unknown preset {name!r}: choose one of {', '.join(PRESETS)}."
            ) from None
        return dataclasses.replace(base, **overrides)


def _logit_bias_problems(bias: Any) -> list[str]:
    """What is wrong with a logit_bias: it must be (token id, bias) pairs (or a dict of them), ids whole and not
    negative, biases from -100 to 100."""
    pairs = list(bias.items()) if isinstance(bias, dict) else list(bias)
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            return [f"logit_bias must map token ids to biases, not {bias!r}."]
        token, value = pair
        if not isinstance(token, int) or isinstance(token, bool) or token < 0:
            return [f"logit_bias names {token!r}, which is no token id (a whole number from 0)."]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not -100 <= value <= 100:
            return [f"logit_bias gives token {token} the bias {value!r}: a bias is a number from -100 to 100."]
    return []


def _problems(p: GenerationParams) -> list[str]:
    """Each invalid setting as a sentence naming the setting, its value and the valid range."""
    problems = []
    if p.mode not in MODES:
        problems.append(f"mode must be one of {', '.join(MODES)}, not {p.mode!r}.")
    if p.drafter not in drafter_kinds.names():
        problems.append(f"drafter must be one of {', '.join(drafter_kinds.names())}, not {p.drafter!r}.")
    problems += [problem for name in RANGES if (problem := _out_of_range(name, getattr(p, name)))]
    if p.temperature < 0:
        problems.append(f"Temperature must be 0 (greedy) or more, not {p.temperature}.")
    if not 0 < p.top_p <= 1:
        problems.append(f"top_p must be in (0, 1] (1 switches it off), not {p.top_p}.")
    if not 0 <= p.min_p <= 1:
        problems.append(f"min_p must be in [0, 1] (0 switches it off), not {p.min_p}.")
    if p.repetition_penalty <= 0:
        problems.append(f"repetition_penalty must be above 0 (1 switches it off), not {p.repetition_penalty}.")
    for name in ("presence_penalty", "frequency_penalty"):
        if not -2 <= getattr(p, name) <= 2:
            problems.append(f"{name} must be between -2 and 2 (0 switches it off), not {getattr(p, name)}.")
    problems += _logit_bias_problems(p.logit_bias)
    if not isinstance(p.lenience, (int, float)) or isinstance(p.lenience, bool) or not 0 <= p.lenience <= 1:
        problems.append(f"lenience must be in [0, 1] (0 is exact; above 0 is lossy), not {p.lenience!r}.")
    if p.kv_bits not in KV_BITS:
        problems.append(f"kv_bits must be 8, 4 or None (full precision), not {p.kv_bits!r}.")
    if p.logprobs is not None and (not isinstance(p.logprobs, int) or not 0 <= p.logprobs <= MAX_TOP_LOGPROBS):
        problems.append(f"logprobs must be None or 0 to {MAX_TOP_LOGPROBS} alternatives, not {p.logprobs!r}.")
    if any(not s for s in p.stop):
        problems.append("Stop strings must not be empty.")
    return problems


_LABELS = {"num_draft": "Draft length (num_draft)", "top_k": "top_k (0 switches it off)"}


def _out_of_range(name: str, value: object) -> str | None:
    """A sentence if a whole-number setting is not a whole number within its range."""
    low, high = RANGES[name]
    label = _LABELS.get(name, name)
    if value is None and name in LEFT_TO_THE_DEVICE:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        return f"{label} must be a whole number, not {value!r}."
    if value < low:
        return f"{label} must be at least {low}, not {value}."
    if high is not None and value > high:
        return f"{label} must be at most {high}, not {value}."
    return None


PRESETS: dict[str, GenerationParams] = {
    "greedy": GenerationParams(temperature=0.0, top_p=1.0),
    "default": GenerationParams(),
    "creative": GenerationParams(temperature=1.0, top_p=0.95, num_draft=4),
    "conservative": GenerationParams(temperature=0.3, top_p=0.9, num_draft=3),
}

