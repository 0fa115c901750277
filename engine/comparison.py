"""Compare: one prompt decoded two ways, each side standard decoding or one drafter, and what the two runs say.

A side is "standard" or a drafter's name from the registry (`drafter_kinds`), so a drafter added there can be compared at once.
Both sides run with the same settings (prompt, seed, temperature, every sampling setting); only the mode and the
drafter differ; sampling, they share a seed (`compared_params`), so that they write the same answer. Whether a
drafter can run with the loaded pair (an MTP head on a target that ships none, a draft model with none loaded) is
the engine's to say when its side starts, in the one line it says it everywhere else.
"""

from __future__ import annotations

import random

from .drafter_kinds import choices, drafter_label, heading, names
from .errors import InvalidParameterError
from .events import GenerationResult
from .params import GenerationParams

STANDARD = "standard"
# Two answers this far apart in length are no measure of each other: a 9-token answer's speed is mostly its first
# passes', a 512-token one's its steady state.
COMPARABLE_LENGTHS = 2.0
MIN_TIMED_TOKENS = 16  # fewer tokens a side are a few rounds, whose times the machine's noise and the order outweigh


def sides() -> tuple[str, ...]:
    """What each side of a Compare can be: standard decoding, or speculation with any drafter."""
    return (STANDARD, *names())


def runnable_sides(drafters: tuple[str, ...]) -> tuple[str, ...]:
    """The sides a pair can run, given the single drafters it has (`ModelPair.drafter_names`): standard decoding and
    the drafter choices it can run (`drafter_kinds.choices`: a Compare offering the MTP heads to a target without any
    only leads to an error)."""
    return (STANDARD, *choices(drafters))


def side_label(side: str) -> str:
    """A side as a person reads it: "standard decoding", "draft model", "MTP head", ..."""
    return "standard decoding" if side == STANDARD else drafter_label(side)


def side_heading(side: str) -> str:
    """A side's label to start a sentence or head a column with ("Built-in MTP drafter")."""
    return heading(side_label(side))


def side_params(params: GenerationParams, side: str) -> GenerationParams:
    """The settings one side runs with: `params` with only the mode and the drafter changed."""
    if side == STANDARD:
        return params.replace(mode="standard")
    return params.replace(mode="speculative", drafter=side)


def compared_params(params: GenerationParams) -> GenerationParams:
    """The settings both sides share: sampling without a seed gets one, drawn afresh each Compare. With a seed the
    engine draws one answer whoever drafts it (`decoding/sampling.py`), so the two speeds are of the same text;
    without one each side sampled its own, and lookup, copying a side that fell into a loop, looked 2.6x as fast
    (SmolLM2 at temperature 0.6)."""
    if params.greedy or params.seed is not None:
        return params
    return params.replace(seed=random.randrange(2**31))


def check_sides(first: str, second: str) -> None:
    """Refuse a Compare that would not compare anything, or a side that is no way of decoding."""
    for side in (first, second):
        if side not in sides():
            raise InvalidParameterError(f"Compare cannot run {side!r}: choose one of {', '.join(sides())}.")
    if first == second:
        raise InvalidParameterError(f"Both sides are {side_label(first)}: choose two different ways to compare.")


def how_it_ran(result: GenerationResult) -> str:
    """What explains a side's speed: tokens per pass and acceptance (standard decoding: one token per pass)."""
    s = result.stats
    if result.mode == STANDARD:
        return "1 token per pass"
    if not s.drafted:
        return "nothing drafted: it ran as standard decoding"
    return f"{s.tokens_per_pass:.2f} tokens per pass, {s.acceptance_rate:.0%} of {s.drafted} drafted accepted"


def verdict(first: str, first_result: GenerationResult, second: str, second_result: GenerationResult) -> str:
    """Both sides' speeds, what explains them, and how fast the second side ran against the first; no ratio when it
    would declare a winner from noise (neither side drafted anything: both ran standard decoding; answers of a few
    tokens, which a new user saw called 1.32x one way and 0.97x the other) or from answers of very different lengths."""
    a, b = first_result.stats.generation_tps, second_result.stats.generation_tps
    speeds = (f"{side_heading(first)} {a:.1f} tok/s ({how_it_ran(first_result)}), {side_label(second)} "
              f"{b:.1f} tok/s ({how_it_ran(second_result)})")
    if not (first_result.stats.drafted or second_result.stats.drafted):
        return f"{speeds}: both ran standard decoding, so neither is faster (their difference is the machine's noise)"
    lengths = sorted(r.stats.generated_tokens for r in (first_result, second_result))
    if lengths[1] > COMPARABLE_LENGTHS * max(lengths[0], 1):
        return (f"{speeds}: the answers' lengths differ too much to compare ({lengths[0]} against {lengths[1]} tokens); "
                "try a prompt both answer at length")
    if lengths[0] < MIN_TIMED_TOKENS:
        return (f"{speeds}: the answers are too short to time ({lengths[0]} and {lengths[1]} tokens: a few rounds, which "
                "the machine's noise outweighs); try a prompt both answer at length")
    ratio = b / a if a else 0.0
    outcome = f"{'faster' if ratio >= 1 else 'slower'} than {side_label(first)}"
    if ratio < 1 and first == STANDARD:
        outcome += ": speculation does not pay here"
    return f"{speeds}: {side_label(second)} {ratio:.2f}x ({outcome})"


def compare_messages(history: list[dict[str, str]], typed: str) -> list[dict[str, str]]:
    """What Compare runs: the conversation up to its last question, or with the typed text as a new one (an answer
    after the last question would be compared against itself)."""
    messages = [*history, {"role": "user", "content": typed}] if typed else list(history)
    while messages and messages[-1]["role"] != "user":
        messages.pop()
    return messages
