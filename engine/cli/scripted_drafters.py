"""Scripted drafters: drafter kinds whose acceptance and cost a script sets, so that Automatic's choice among several
drafters can be measured on a machine where no trained drafter weights exist (`specchat-cli benchmark --scripted`).

A scripted drafter proposes the target's own greedy continuation of the prompt (found by a standard run of the same
prompt, `script_drafters`), each draft token right with the chance its script gives the prompt's kind and otherwise
replaced by a wrong one. Whether the token at a position is right is fixed by the script's seed, the prompt and the
position, so a run repeats exactly whatever lengths the policy drafts. Each pass costs a real matrix product over
float32 weights of the size the script sets (a share of the target's weight bytes): one pass for a whole block (a
block drafter, like DFlash), one per draft token otherwise (like a draft model), so a draft costs compute as a
network of that size would on this machine.

It is a drafter kind like any other: one row (`register_scripted`, with this module as its round side) and a state
the pair holds, which hears no hidden states; Automatic sees it as a candidate exactly as it sees a drafter folder.
Its drafts are verified like any other's, so a wrong one costs time, never exactness: greedy output stays standard
decoding's. Nothing in the product registers it.

A script (JSON; `acceptance` by the prompt file's categories, `default` for any other):

    {"name": "scripted-block", "label": "scripted block drafter", "block": true, "cost": 0.2,
     "acceptance": {"code-writing": 0.9, "chat": 0.3}, "default": 0.0, "seed": 0}
"""

from __future__ import annotations

import json
import random
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mlx.core as mx

from .. import drafter_kinds
from ..decoding import clock
from ..decoding.cached_model import CachedModel
from ..decoding.drafting.drafter import NO_DRAFT, Draft, point_draft
from ..decoding.drafting.maker import MakerInputs
from ..decoding.pair import ModelPair
from ..decoding.policy.draft_length import DraftPolicy
from ..errors import SpecChatError
from ..models.loading import LoadedModel
from ..models.memory import weight_bytes
from ..params import GenerationParams

NAME = re.compile(r"scripted[a-z0-9-]*")  # apart from the product's kinds, and free of the policy's qualifier ("+")


@dataclass(frozen=True)
class Script:
    """What a scripted drafter is: its name and label, how it drafts, what a pass costs, and how often it is right.

    Attributes:
        name: its kind's name (the policy's source, the benchmark's mode), "scripted..." .
        label: how a person reads it.
        block: drafts a whole block in one pass; False: one pass per draft token.
        cost: the float32 weight bytes a pass reads, as a share of the target's weight bytes.
        acceptance: by prompt category, the chance that each draft token is the target's.
        default: that chance for a category not listed.
        seed: fixes which positions are right.
    """

    name: str
    label: str
    block: bool
    cost: float
    acceptance: dict[str, float] = field(default_factory=dict)
    default: float = 0.0
    seed: int = 0

    @classmethod
    def read(cls, path: Path) -> Script:
        """The script in a JSON file, or a SpecChatError naming what is wrong with it and the fix."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise SpecChatError(f"Cannot read the scripted drafter {path}: {e.strerror}. Check the path.") from e
        except json.JSONDecodeError as e:
            raise SpecChatError(f"The scripted drafter {path} is not valid JSON ({e.msg}, line {e.lineno}). Fix the file.") from e
        return cls.of(data, path)

    @classmethod
    def of(cls, data: Any, path: Path) -> Script:
        """The script in parsed JSON (`path`: where it came from, for the error)."""
        try:
            script = cls(str(data["name"]), str(data.get("label", data["name"])), bool(data["block"]),
                         float(data["cost"]), {str(k): float(v) for k, v in data.get("acceptance", {}).items()},
                         float(data.get("default", 0.0)), int(data.get("seed", 0)))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise SpecChatError(f"The scripted drafter {path} needs an object with name, block, cost and acceptance "
                                f"(by category) ({type(e).__name__}: {e}). Fix the file.") from e
        chances = [script.default, *script.acceptance.values()]
        if not NAME.fullmatch(script.name) or script.cost < 0 or not all(0.0 <= c <= 1.0 for c in chances):
            raise SpecChatError(f"The scripted drafter {path} needs a name like 'scripted-block' (lower case, starting "
                                "'scripted'), a cost of 0 or more and chances between 0 and 1. Fix the file.")
        return script

    def right(self, line: Line, position: int) -> bool:
        """Whether its draft token at `position` of the answer is the target's (fixed by the seed)."""
        coin = random.Random(f"{self.seed}/{self.name}/{line.salt}/{position}").random()
        return coin < self.acceptance.get(line.category, self.default)


@dataclass(frozen=True)
class Line:
    """What a scripted drafter knows of one prompt: the target's greedy continuation and the prompt's category."""

    tokens: list[int]
    category: str
    salt: int  # the prompt's checksum: each prompt gets its own right and wrong positions


class ScriptedState:
    """A scripted drafter's side of the pair: its script, the weights its passes read, and its lines by prompt.

    Args:
        script: what it is.
        width: the side of its square weight matrix.
    """

    def __init__(self, script: Script, width: int) -> None:
        self.script = script
        self.weights = mx.random.normal((width, width), key=mx.random.key(script.seed)) / width**0.5
        mx.eval(self.weights)  # made now, not in its first draft's timed pass
        self.lines: dict[tuple[int, ...], Line] = {}

    def learn(self, prompt: list[int], continuation: list[int], category: str) -> None:
        """Draft `continuation` (the target's greedy one) after `prompt`, right as often as `category` says."""
        salt = zlib.crc32(json.dumps(prompt).encode())
        self.lines[tuple(prompt)] = Line(list(continuation), category, salt)

    def pay(self, k: int) -> None:
        """Run the passes a draft of `k` tokens costs: one over a block of k rows, or k chained over one row."""
        x = mx.ones((k if self.script.block else 1, self.weights.shape[0]))
        for _ in range(1 if self.script.block else k):
            x = mx.tanh(x @ self.weights)
        mx.eval(x)

    def reset(self) -> None:
        """Nothing to forget: its lines are the benchmark's, not a chat's."""


class ScriptedDrafter:
    """The round side: proposes the next tokens of its line, as many as the policy chooses, each right or wrong as
    the script fixed; nothing off its line (a prompt it has no line for, or an answer gone elsewhere).

    Args:
        state: its script, weights and lines.
        policy: chooses how many tokens to draft.
    """

    def __init__(self, state: ScriptedState, policy: DraftPolicy) -> None:
        self.state = state
        self.policy = policy
        self.source = state.script.name
        self._line: Line | None = None
        self._prompt_length = 0
        self._last_k = 0

    @property
    def idle(self) -> bool:
        """The policy gave it nothing to draft last time (or it has nothing to draft)."""
        return self._last_k == 0

    def start(self, context: list[int]) -> None:
        self._line = self.state.lines.get(tuple(context))
        self._prompt_length = len(context)
        self._last_k = 0

    def propose(self, context: list[int], limit: int, split_pass: bool = False) -> Draft:
        self._last_k = 0
        position = len(context) - self._prompt_length
        line = self._line
        if line is None or context[self._prompt_length:] != line.tokens[:position]:
            return NO_DRAFT
        available = min(limit, len(line.tokens) - position)
        k = self._last_k = self.policy.choose(self.source, available, split_pass) if available > 0 else 0
        if not k:
            return NO_DRAFT
        start = clock.now()
        self.state.pay(k)
        ids = [_token(line, self.state.script, position + i) for i in range(k)]
        return point_draft(ids, self.source, clock.now() - start)

    def speculate(self, context: list[int], draft: Draft, verdict: object) -> int:
        """Drafts nothing ahead."""
        return 0

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        """Keeps nothing: its next draft is read off its line."""


def _token(line: Line, script: Script, position: int) -> int:
    """Its draft token at `position`: the line's, or, where the script says wrong, another id."""
    right = line.tokens[position]
    return right if script.right(line, position) else (right - 1 if right else 1)


def load_state(target: LoadedModel, target_cache: CachedModel, path: Path | None) -> ScriptedState:
    """The scripted drafter of the script in `path`, its weights sized against the target's."""
    if path is None:
        raise SpecChatError("A scripted drafter needs its script: pass it to the benchmark with --scripted FILE.")
    script = Script.read(path)
    floats = script.cost * weight_bytes(target.model) / 4
    return ScriptedState(script, max(1, round(floats**0.5)))


def make_drafter(given: MakerInputs) -> ScriptedDrafter:
    """The round's drafter of the scripted kind asked for, from the state `script_drafters` loaded into the pair (its
    drafts are point masses: the warp is not needed)."""
    return ScriptedDrafter(given.state(ScriptedState), given.policy)


def register_scripted(path: Path) -> str:
    """Register the scripted drafter in `path` as a drafter kind (one row, this module its round side) and as a
    benchmark mode that pins it; returns its name."""
    from .benchmark import add_pinned_mode

    script = Script.read(path)
    drafter_kinds.register(drafter_kinds.DrafterKind(script.name, script.label, block=script.block,
                                                     round=__name__, listens=False))
    add_pinned_mode(script.name)
    return script.name


def script_drafters(pair: ModelPair, paths: list[Path], prompts: list[list[int]], categories: list[str],
                    params: GenerationParams) -> None:
    """Load the scripted drafters in `paths` (registered) into the pair, and give each one every prompt's line: the
    target's greedy continuation, from one standard run of the prompt."""
    from .benchmark import measure_ours

    if not paths:
        return
    if not params.greedy:
        raise SpecChatError("Scripted drafters propose the target's greedy continuation: run the benchmark greedy "
                            "(its default; leave out --temperature).")
    states: list[ScriptedState] = []
    for path in paths:
        name = Script.read(path).name
        pair.set_drafter(name, path)
        states.append(pair.drafter_state(name))  # type: ignore[arg-type]  # the state this module's load_state made
    for prompt, category in zip(prompts, categories):
        pair.forget_history()
        tokens = measure_ours(pair, prompt, params.replace(mode="standard")).token_ids
        for state in states:
            state.learn(prompt, tokens, category)
