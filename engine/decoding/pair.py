"""A loaded target with an optional draft: what a chat session generates with, reused across calls.

The pair owns the models' prompt caches, so consecutive generations (chat turns, regenerations, the
speculative/standard toggle, Compare) reuse whatever prefix of the context the models already processed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import cached_property
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import mlx.core as mx

from .. import drafter_kinds
from ..errors import IncompatiblePairError, InvalidParameterError, UnsupportedModelError
from ..models.compatibility import PairCheck, check_tokenizers
from ..models.draft_choice import drafter_folder
from ..models.load_progress import LoadProgress
from ..models.loading import LoadedModel, load_model
from ..models.memory import weight_bytes
from .cached_model import CachedModel
from .drafting.drafter_state import AttachedStates, DrafterState
from .drafting.history_lookup import DraftHistory
from .prompt_cache import PromptCache
from .prompt_cache_disk import model_identity
from .prompt_ids import Message, is_base_model, prompt_token_ids
from .reasoning import ThinkMarkers, can_switch_thinking, think_markers

Kept = TypeVar("Kept")  # what a pair keeps per settings: a DraftPolicy, or SSD's switch
REMEMBERED_ANSWERS = 64
KEPT_POLICIES = 8  # adaptive policies kept per pair, one per combination of drafter and sampling settings


class ModelPair:
    """A target model and an optional draft model that shares its tokenizer.

    Attributes:
        target: the model whose distribution the output follows.
        draft: the small model that proposes tokens (None: prompt lookup and standard decoding only).
        check: the verdict on the pair's tokenizers (warnings included).
        target_cache, draft_cache: the models' live caches.
        prompt_cache: the prefixes shelved beside them, recalled when a prompt starts with one (prompt_cache.py).
        history: the conversations lookup drafts from besides the context (finished answers join it).
        idle: set while no answer is being generated. Background work for the pair (indexing the saved chats)
            waits for it, so it never competes with an answer for Python's lock and the cores (the first
            answer after a launch used to run beside the indexing of every saved chat).
        drafters: the sides of the chat of the drafters that keep one, by kind (a drafter folder loaded as the
            draft; the target's own heads once used; each made by its kind's `load_state`).
    """

    def __init__(self, target: LoadedModel, draft: LoadedModel | None = None) -> None:
        self.target = target
        self.kv_bits: int | None = None
        self.target_cache = CachedModel(target.model, identity=model_identity(target))
        self.prompt_cache = PromptCache()
        self.draft: LoadedModel | None = None
        self.draft_cache: CachedModel | None = None
        self.check = PairCheck(compatible=True)
        self._vocab_width: int | None = None
        self._answers: OrderedDict[str, list[int]] = OrderedDict()
        self._policies: OrderedDict[tuple, object] = OrderedDict()
        self.history = DraftHistory()
        self.idle = threading.Event()
        self.idle.set()
        self.drafters: dict[str, DrafterState] = {}
        self.set_draft(draft)

    @classmethod
    def load(cls, target: str, draft: str | None = None, progress: LoadProgress | None = None) -> ModelPair:
        """Load a target and an optional draft by name (folder, .gguf file or downloaded repo id), reporting each
        stage of each to `progress`."""
        target_model = load_model(target, progress=progress)
        drafter = drafter_folder(draft)  # a drafter folder (EAGLE-3, DFlash...): no draft model, a drafter of the target
        draft_model = load_model(draft, progress=progress) if draft and drafter is None else None
        pair = cls(target_model, draft_model)
        if drafter is not None:
            pair.set_drafter(*drafter)
        return pair

    def set_draft(self, draft: LoadedModel | None) -> None:
        """Attach (or, with None, detach) a draft model, refusing one whose tokenizer differs from the target's."""
        self.forget_policies()
        self.prompt_cache.clear(self.caches())
        if draft is None:
            self.draft, self.draft_cache, self.check = None, None, PairCheck(compatible=True)
            return
        check = check_tokenizers(self.target.tokenizer, draft.tokenizer)
        if not check.compatible:
            raise IncompatiblePairError(
                check.explain(self.target.name, draft.name) + " Pick a draft from the target's model family."
            )
        self.draft, self.draft_cache, self.check = draft, CachedModel(draft.model, kv_bits=self.kv_bits,
                                                                  identity=model_identity(draft)), check

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

    def set_prefill_step_size(self, tokens: int | None) -> None:
        """Prompt tokens per forward pass from now on, for both models (None: the device's own)."""
        for cache in self.caches():
            cache.prefill_step_size = tokens

    def discard_pending(self) -> None:
        """After an interrupted generation: caches fed tokens whose ids were never read start over."""
        for cache in self.caches():
            cache.discard_pending()

    def reset_caches(self) -> None:
        """Forget every cached prompt, as a freshly loaded pair would have none (the prompt cache's disk keeps them)."""
        self.prompt_cache.clear(self.caches())
        for cache in self.caches():
            cache.reset()
        for state in self.drafters.values():
            state.reset()

    def close(self) -> None:
        """Before the pair is let go (the server stops): the prompt prefixes it holds in memory go to the prompt cache's
        disk, if it has one, and the files are written before this returns (they outlive the process)."""
        self.prompt_cache.close(self.caches())

    def set_drafter(self, kind: str, path: Path | None) -> None:
        """Draft with the `kind` drafter in `path` (`--drafter kind`), or, with None, with none of that kind; one line
        if it does not fit the target (each kind's `check_target`)."""
        self.forget_policies()
        self.drafters.pop(kind, None)
        if path is not None:
            self.drafters[kind] = round_side(kind).load_state(self.target, self.target_cache, path)

    @property
    def drafter_loaded(self) -> str | None:
        """The drafter folder loaded as the pair's draft ("eagle3", "dflash"...), None for none (or a draft model)."""
        return next((kind for kind in self.drafters if drafter_kinds.kind(kind).folder is not None), None)

    def drafter_state(self, kind: str) -> DrafterState:
        """The side of the chat of a drafter that keeps one: the target's own heads (MTP) loaded on first use, or one
        line saying why the target has none; a drafter folder's, or one line saying what the `kind` drafter needs
        loaded."""
        if kind not in self.drafters:
            row = drafter_kinds.kind(kind)
            if row.folder is not None:
                raise InvalidParameterError(
                    f"The {row.label} needs {row.needs}: load its folder as the draft ({row.checkpoint} for this "
                    "target), or pick another drafter."
                )
            self.drafters[kind] = round_side(kind).load_state(self.target, self.target_cache, None)
        return self.drafters[kind]

    def hidden_listener(self, drafter: str) -> AttachedStates | None:
        """The drafter state that hears the target's hidden states when `drafter` drafts (None: no such drafter)."""
        if not drafter_kinds.listens(drafter):
            return None
        state = self.drafter_state(drafter)
        if not isinstance(state, AttachedStates):
            raise TypeError(f"The {drafter} drafter listens to the target (its row says so), so its load_state must "
                            f"make AttachedStates, not a {type(state).__name__}.")
        return state

    def drafter_names(self) -> tuple[str, ...]:
        """Every single drafter this pair can draft with (an Automatic choice's candidates)."""
        return drafter_kinds.candidates(tuple(self.drafters), self.draft is not None, self.target.config)

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
        self.prompt_cache.clear(self.caches())
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

    def remembered_answer(self, text: str) -> list[int]:
        """The ids generated for an answer of exactly this text ([] for one not remembered)."""
        return list(self._answers.get(text, []))

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



def round_side(kind: str) -> ModuleType:
    """The module holding a drafter kind's round side, named by its row: its `make_drafter` (`drafting/maker.py`),
    and for a kind that listens to the target its `load_state`."""
    return import_module(drafter_kinds.kind(kind).round)
