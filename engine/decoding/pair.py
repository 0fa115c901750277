"""A loaded target with an optional draft: what a chat session generates with, reused across calls.

The pair owns the models' prompt caches, so consecutive generations (chat turns, regenerations, the
speculative/standard toggle, Compare) reuse whatever prefix of the context the models already processed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import mlx.core as mx

from ..errors import IncompatiblePairError, InvalidParameterError, UnsupportedModelError
from ..models.compatibility import PairCheck, check_tokenizers
from ..models.loading import LoadedModel, load_model
from ..models.memory import weight_bytes
from .cached_model import CachedModel
from .chat import Message, is_base_model, prompt_token_ids
from .dflash_drafter import DFlashState
from .eagle3_drafter import Eagle3State
from .history import DraftHistory
from .mtp_drafter import MTPState
from .reasoning import ThinkMarkers, can_switch_thinking, think_markers

LoadProgress = Callable[[str, int, int], None]
Kept = TypeVar("Kept")  # what a pair keeps per settings: a DraftPolicy, or SSD's switch
State = TypeVar("State")  # a drafter state the pair holds (EAGLE-3, DFlash)
REMEMBERED_ANSWERS = 64
KEPT_POLICIES = 8  # adaptive policies kept per pair, one per combination of drafter and sampling settings
# Drafters loaded as the draft, and the checkpoints they load from.
DRAFTER_NAMES = {"eagle3": "an EAGLE-3 drafter", "dflash": "a DFlash drafter", "dspark": "a DSpark drafter"}
CHECKPOINTS = {"eagle3": "a speculators-format EAGLE-3 checkpoint", "dflash": "a z-lab DFlash or DFlash2 checkpoint",
               "dspark": "a DeepSeek DSpark checkpoint"}


class ModelPair:
    """A target model and an optional draft model that shares its tokenizer.

    Attributes:
        target: the model whose distribution the output follows.
        draft: the small model that proposes tokens (None: prompt lookup and standard decoding only).
        check: the verdict on the pair's tokenizers (warnings included).
        target_cache, draft_cache: the models' prompt caches.
        history: the conversations lookup drafts from besides the context (finished answers join it).
    """

    def __init__(self, target: LoadedModel, draft: LoadedModel | None = None) -> None:
        self.target = target
        self.kv_bits: int | None = None
        self.target_cache = CachedModel(target.model)
        self.draft: LoadedModel | None = None
        self.draft_cache: CachedModel | None = None
        self.check = PairCheck(compatible=True)
        self._vocab_width: int | None = None
        self._answers: OrderedDict[str, list[int]] = OrderedDict()
        self._policies: OrderedDict[tuple, object] = OrderedDict()
        self.history = DraftHistory()
        self._mtp: MTPState | None = None
        self._eagle3: Eagle3State | None = None
        self._dflash: DFlashState | None = None
        self._dspark: DFlashState | None = None  # a DSpark drafter's side is DFlash's (dspark_drafter.py)
        self.set_draft(draft)

    @classmethod
    def load(cls, target: str, draft: str | None = None, progress: LoadProgress | None = None) -> ModelPair:
        """Load a target and an optional draft by name (folder, .gguf file or downloaded repo id)."""

        def stage(name: str) -> Callable[[int, int], None] | None:
            return (lambda done, total: progress(name, done, total)) if progress else None

        from ..drafters.draft_folder import hidden_drafter

        target_model = load_model(target, progress=stage(f"Importing {target}"))
        drafter = hidden_drafter(draft)  # an EAGLE-3, DFlash or DSpark folder: no draft model, a drafter of the target
        draft_model = load_model(draft, progress=stage(f"Importing {draft}")) if draft and drafter is None else None
        pair = cls(target_model, draft_model)
        if drafter is not None:
            {"eagle3": pair.set_eagle3, "dflash": pair.set_dflash, "dspark": pair.set_dspark}[drafter[0]](drafter[1])
        return pair

    def set_draft(self, draft: LoadedModel | None) -> None:
        """Attach (or, with None, detach) a draft model, refusing one whose tokenizer differs from the target's."""
        self.forget_policies()
        if draft is None:
            self.draft, self.draft_cache, self.check = None, None, PairCheck(compatible=True)
            return
        check = check_tokenizers(self.target.tokenizer, draft.tokenizer)
        if not check.compatible:
            raise IncompatiblePairError(
                check.explain(self.target.name, draft.name) + " Pick a draft from the target's model family."
            )
        self.draft, self.draft_cache, self.check = draft, CachedModel(draft.model, kv_bits=self.kv_bits), check

    @property
    def tokenizer(self):  # mlx-lm's TokenizerWrapper
        return self.target.tokenizer

    @cached_property
    def think_markers(self) -> ThinkMarkers | None:
        """The target's think markers (None: it does not think), read once: gpt-oss's are looked up in its vocabulary."""
        return think_markers(self.tokenizer)

    @property
    def is_base_model(self) -> bool:
        """The target has no chat template: chats are a plain transcript it continues (see chat.py)."""
        return is_base_model(self.tokenizer)

    @property
    def can_switch_thinking(self) -> bool:
        """Whether thinking can be switched off (the target thinks, and its template reads `enable_thinking`)."""
        return self.think_markers is not None and can_switch_thinking(self.tokenizer)

    def models_used(self, uses_draft: bool) -> list[tuple[LoadedModel, CachedModel]]:
        """The models a generation reads: the target, and the draft model when it drafts."""
        used = [(self.target, self.target_cache)]
        if uses_draft and self.draft is not None and self.draft_cache is not None:
            used.append((self.draft, self.draft_cache))
        return used

    def context_limit(self, uses_draft: bool = True) -> tuple[int, LoadedModel]:
        """The longest context the models a generation reads can take, and the model that sets it."""
        return min(((m.context_length, m) for m, _ in self.models_used(uses_draft)), key=lambda x: x[0])

    @property
    def context_length(self) -> int:
        """The pair's limit with both models in use (what the window shows)."""
        return self.context_limit(uses_draft=True)[0]

    @property
    def draft_weight_share(self) -> float:
        """The draft's weight bytes over the target's (0 without a draft): a draft step's cost in target steps
        where decoding is memory-bound (Apple GPUs), for the cost model's prediction there."""
        if self.draft is None:
            return 0.0
        return weight_bytes(self.draft.model) / max(weight_bytes(self.target.model), 1)

    def network_clock(self) -> Callable[[], float] | None:
        """The head's seconds in the pipeline's collectives so far, for a target across Macs (None on one machine)."""
        clock = getattr(self.target.model, "network_seconds", None)
        return clock if callable(clock) else None

    @property
    def vocab_width(self) -> int:
        """Width of the target's logits: the id space drafts and distributions are compared in."""
        if self._vocab_width is None:
            probe = CachedModel(self.target.model)
            logits = probe.forward(mx.array([0], dtype=mx.uint32), ids=[0])
            self._vocab_width = int(logits.shape[-1])
        return self._vocab_width

    def caches(self) -> list[CachedModel]:
        """The prompt caches of the models loaded (the target's first)."""
        return [c for c in (self.target_cache, self.draft_cache) if c is not None]

    def set_prefill_step_size(self, tokens: int) -> None:
        """Prompt tokens per forward pass from now on, for both models."""
        for cache in self.caches():
            cache.prefill_step_size = tokens

    def discard_pending(self) -> None:
        """After an interrupted generation: caches fed tokens whose ids were never read start over."""
        for cache in self.caches():
            cache.discard_pending()

    def reset_caches(self) -> None:
        """Forget every cached prompt, as a freshly loaded pair would have none."""
        for cache in self.caches():
            cache.reset()
        for state in (self._mtp, self._eagle3, self._dflash, self._dspark):
            if state is not None:
                state.reset()

    def mtp_state(self) -> MTPState:
        """The target's built-in MTP head with its cache, loaded on first use (it is not in mlx-lm's model), or one
        line saying why the target has none."""
        if self._mtp is None:
            from ..drafters.mtp import MTPRunner
            from ..drafters.mtp_loading import load_mtp_head

            head = load_mtp_head(self.target.path, self.target.model, self.target.config)
            self._mtp = MTPState(MTPRunner(head, self.target.model), self.target_cache)
        return self._mtp

    def set_eagle3(self, path: Path | None) -> None:
        """Draft with the EAGLE-3 drafter in `path` (`--drafter eagle3`), or with none; one line if it does not fit."""
        self.forget_policies()
        self._eagle3 = None
        if path is not None:
            from ..drafters.eagle3 import load_eagle3

            self._eagle3 = Eagle3State(load_eagle3(path, self.target), self.target_cache)

    @property
    def eagle3_loaded(self) -> bool:
        return self._eagle3 is not None

    @property
    def drafter_loaded(self) -> str | None:
        """The drafter loaded as the pair's draft ("eagle3", "dflash", "dspark"), None for none (or a draft model)."""
        loaded = {"eagle3": self._eagle3, "dflash": self._dflash, "dspark": self._dspark}
        return next((kind for kind, state in loaded.items() if state is not None), None)

    def eagle3_state(self) -> Eagle3State:
        """The pair's EAGLE-3 drafter with its cache, or one line saying none is loaded."""
        return _loaded("eagle3", self._eagle3)

    def set_dflash(self, path: Path | None) -> None:
        """Draft with the DFlash drafter in `path` (`--drafter dflash`), or with none; one line if it does not fit
        the target (`drafters/dflash_pairing.py`)."""
        self._dflash = None
        self._dflash = self._block_state("dflash", path)

    def dflash_state(self) -> DFlashState:
        """The pair's DFlash drafter with its cache, or one line saying none is loaded."""
        return _loaded("dflash", self._dflash)

    def set_dspark(self, path: Path | None) -> None:
        """Draft with the DSpark drafter in `path` (`--drafter dspark`), or with none; one line if it does not fit
        the target or is a head SpecChat cannot run (`drafters/dspark.py`)."""
        self._dspark = None
        self._dspark = self._block_state("dspark", path)

    def dspark_state(self) -> DFlashState:
        """The pair's DSpark drafter with its cache, or one line saying none is loaded."""
        return _loaded("dspark", self._dspark)

    def _block_state(self, kind: str, path: Path | None) -> DFlashState | None:
        """A block drafter (DFlash's or DSpark's) of `path` bound to the target, with its side of the chat."""
        self.forget_policies()
        if path is None:
            return None
        from ..drafters.dflash import load_drafter_for
        from ..drafters.dspark import load_dspark_drafter_for

        load = {"dflash": load_drafter_for, "dspark": load_dspark_drafter_for}[kind]
        drafter = load(path, self.target.model, self.target.config, self.target.display_name)
        return DFlashState(drafter, self.target_cache)

    def hidden_listener(self, drafter: str) -> MTPState | DFlashState | None:
        """The drafter state that hears the target's hidden states when `drafter` drafts (None: no such drafter)."""
        states = {"mtp": self.mtp_state, "eagle3": self.eagle3_state, "dflash": self.dflash_state,
                  "dspark": self.dspark_state}
        return states[drafter]() if drafter in states else None

    def policy(self, key: tuple, make: Callable[[], Kept]) -> Kept:
        """The adaptive policy (or SSD's switch) for one combination of drafter and settings, kept across generations.

        What drafting costs and how often drafts are accepted depend on the models, the machine and the
        settings, not on the chat: keeping the estimates lets later turns and later chats skip the learning
        rounds that short answers cannot pay for.
        """
        if key not in self._policies:
            self._policies[key] = make()
            while len(self._policies) > KEPT_POLICIES:
                self._policies.popitem(last=False)
        self._policies.move_to_end(key)
        return self._policies[key]  # type: ignore[return-value]  # make() built what is kept under key

    def forget_policies(self) -> None:
        """Start learning anew (another draft model; or a benchmark that wants every mode from the same state)."""
        self._policies.clear()

    def forget_history(self) -> None:
        """Draft from the context only until conversations are added again (benchmarks repeat their prompts)."""
        self.history = DraftHistory()

    def set_kv_bits(self, bits: int | None) -> None:
        """Quantize full-attention keys and values to `bits` (None: full precision); caches start over on a change."""
        if bits == self.kv_bits:
            return
        self.kv_bits = bits
        for cache in self.caches():
            cache.kv_bits = bits
            cache.reset()

    def require_speculation(self, uses_draft: bool) -> None:
        """Refuse speculation with a model whose cache SpecChat cannot rewind, naming the mode that works."""
        for model, cache in self.models_used(uses_draft):
            if not cache.supported:
                kinds = sorted({type(layer).__name__ for layer in cache.cache})
                raise UnsupportedModelError(
                    f"{model.display_name} is a {model.config.get('model_type', 'unknown')!r} model whose cache "
                    f"({', '.join(kinds)}) SpecChat cannot rewind after a rejected draft, so it cannot take part in "
                    "speculative decoding. Use standard decoding with it (--mode standard, or switch Speculative off)."
                )

    def prompt_ids(
        self, prompt: str | Sequence[Message], chat: bool = True, system_prompt: str | None = None,
        tools: list[dict[str, Any]] | None = None, think: bool = True,
    ) -> list[int]:
        """The target's token ids for a prompt or conversation (earlier answers as the ids generated for them;
        `tools` for the template; `think` False: the template's no-think prompt)."""
        return prompt_token_ids(self.tokenizer, prompt, chat=chat, system_prompt=system_prompt, answers=self._answers,
                                tools=tools, think=think)

    def remember_answer(self, text: str, tokens: list[int]) -> None:
        """Keep an answer's generated ids, to splice into a later conversation that quotes it verbatim.

        Only answers whose ids decode to exactly their text are kept (not one cut short by a stop string).
        """
        if not text.strip() or self.tokenizer.decode(tokens) != text:
            return
        self._answers[text] = list(tokens)
        self._answers.move_to_end(text)
        while len(self._answers) > REMEMBERED_ANSWERS:
            self._answers.popitem(last=False)


def _loaded(kind: str, state: State | None) -> State:
    """A drafter loaded as the pair's draft, or one line saying that `--drafter kind` needs one."""
    if state is None:
        raise InvalidParameterError(
            f"The {kind} drafter needs {DRAFTER_NAMES[kind]}: pass its folder as the draft (--draft PATH, "
            f"{CHECKPOINTS[kind]} for this target), or pick another drafter."
        )
    return state
