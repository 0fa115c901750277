"""A model together with its cache and the token ids that cache holds.

Knowing which ids are in the cache lets every caller simply ask for "the logits after this context" and pay
only for the tokens the cache lacks. That one rule gives three features without bookkeeping of their own:

- prompt caching across chat turns (the next turn shares a prefix with the last);
- exact rewinds after rejected drafts (the cache goes back to the common prefix);
- a draft model catching up after rounds it sat out (it prefills what it missed).

How a cache goes back depends on its layers (`caches.py`): attention caches drop positions; recurrent state
and far rewinds of sliding windows return to a checkpoint, a snapshot taken where a rewind may later need to
go (the start of each turn; before each verify pass on models with recurrent state), and the tokens after
the checkpoint are fed again with the next pass. A rewind that cannot be exact starts over.

A drafter that drafts from the target's hidden states (an MTP head) attaches as the `listener`: every pass then
also records the states it asks for and hands them over with the position of its first token
(`hidden_states.py`), prefill chunks included, so no position is ever computed twice for it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import KVCache

from ..models.vision import ImageKey, Shift
from . import caches
from .hidden_states import HiddenStateListener, run_with_taps

TURN_CHECKPOINTS = 2  # the latest turns a Regenerate or an edit of the last message returns to
EQUAL_COST_CONTEXT = 8192  # `equal_cost_context` of a model whose arguments do not give its hidden size
EQUAL_COST_HIDDEN_SIZES = {"gpu": 8, "cpu": 2}  # `equal_cost_context` in hidden sizes, by the device MLX runs on
PREFILL_STEPS = {"gpu": 512, "cpu": 128}  # `default_prefill_step`, by the device MLX runs on


def device_kind() -> str:
    """"gpu" or "cpu": the device MLX runs on, which some of the costs below depend on."""
    return "gpu" if mx.default_device() == mx.gpu else "cpu"


def default_prefill_step() -> int:
    """Prompt tokens in a prefill's first chunk, on this device.

    A Stop lands between chunks, so a chunk's time is how long a Stop can wait. A GPU wants wide chunks to fill
    it (512, mlx-lm's own). MLX's CPU backend is compute-bound at any width: Qwen2.5-Coder-0.5B read 1,536 tokens
    in the same 33 s in chunks of 128, 256 or 512 tokens, while its Stop waited up to 2.1 s, 4.1 s and 9.1 s
    (`tests/benchmarks/prefill_chunks.py --steps 512,256,128`, docs/speed.md), so the CPU takes 128."""
    return PREFILL_STEPS[device_kind()]


def equal_cost_context(model: nn.Module) -> int:
    """How many cached positions make a prompt token's attention cost what its pass through the weights does.

    Per layer and token, the weights cost 12-19 d^2 multiply-adds for hidden size d (the projections, and an MLP
    3-5 d wide), attention 2 d for each position before it: the two meet at 6-9 d positions, and on a GPU, where
    attention is one fused kernel, 8 d is taken (7k positions for Qwen2.5's 0.5B model, 29k for its 7B). MLX's
    CPU backend runs attention unfused (the scores written out, a softmax, then the values), several times slower
    per multiply-add than the weights' BLAS matmuls: there the costs met at 0.8-1.8 d for SmolLM2-135M
    (`tests/benchmarks/prefill_chunks.py`, docs/speed.md) and near 2.4 d for Qwen2.5's 0.5B, and 2 d is taken."""
    args = getattr(model, "args", None)
    hidden = getattr(args, "hidden_size", None)
    if not isinstance(hidden, int) or hidden <= 0:
        return EQUAL_COST_CONTEXT
    return EQUAL_COST_HIDDEN_SIZES[device_kind()] * hidden


def prefill_chunk_length(step: int, position: int, equal_cost: int) -> int:
    """Tokens in the prefill chunk read after `position` cached ones: `step` at the start, fewer as the context
    grows, so that every chunk costs about what the first did.

    A chunk's cost is its tokens' weights plus their attention to every position before them, which grows with
    the context: at 20k positions a 512-token chunk of a 0.5B model took about 100 s on a 2-core CPU, ten times
    the first, and a Stop, which lands between chunks, waited for it. Chunks of step / (1 + position /
    equal_cost) tokens keep each to about the first one's work (`equal_cost_context`), at the price of more,
    smaller passes late in a long prompt; the rule depends on positions only, so a prompt is read in the same
    chunks every time."""
    return max(1, round(step * equal_cost / (equal_cost + position)))


def common_prefix_length(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix, by slice comparison (C speed) and bisection on a mismatch."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def shared_prefix(tokens: list[int], shift: Shift | None, ids: list[int], images: ImageKey | None) -> int:
    """How many first positions of a prompt (`ids`, showing `images`) keys and values held for `tokens` (showing the
    images of `shift`) serve: the ids in common, and positions from the held images on only if they are the same."""
    shared = common_prefix_length(tokens, ids)
    if shift is not None and shift.key != images:
        shared = min(shared, shift.start)
    return shared


@dataclass
class Checkpoint:
    """Where the cache held `position` tokens, and what each layer needs to return there."""

    position: int
    saved: list[Any]


class CachedModel:
    """A model, its cache, and `tokens`, the ids whose keys, values or state the cache holds.

    Args:
        model: the mlx-lm model.
        prefill_step_size: prompt tokens per forward pass when catching up on a long stretch of context (at its
            start; `prefill_chunk_length`). None: the device's own (`default_prefill_step`).
        kv_bits: quantize full-attention keys and values to 8 or 4 bits (None: full precision).
        identity: what tells this model's keys and values from another's (`prompt_cache_disk.model_identity`: its
            files and the machine's MLX), which a prefix written to disk is filed under; None: never written.

    Attributes:
        cache: one entry per layer (`caches.make_cache`).
        tokens: the ids in the cache, in order.
        rewinds: how rewinds went, by kind ("dropped", "restored", "reset"), for tests and the benchmark.
        listener: who hears the hidden states of every pass (None: nobody; passes run as plain model calls).
        passes: forward passes run so far (a listener attached later can tell whether it missed some).
        images: the images the cache holds, and how positions shift after them (a vision target's; None: the ids
            say all the cache holds). Two images take the same ids, so what the cache shares with a prompt
            depends on them too (`shared_with`); they go with the cache's contents (rewinds, forks, adoptions).
    """

    def __init__(self, model: nn.Module, prefill_step_size: int | None = None, kv_bits: int | None = None,
                 identity: str | None = None) -> None:
        self.model = model
        self.identity = identity
        self.prefill_step_size = prefill_step_size
        self.equal_cost_context = equal_cost_context(model)
        self.kv_bits = kv_bits
        self.rewinds = {"dropped": 0, "restored": 0, "reset": 0}
        self._kv_group: int | None = None  # found once per model, the first time kv_bits are asked for
        self.listener: HiddenStateListener | None = None
        self.passes = 0
        self.reset()

    def reset(self) -> None:
        """Forget everything: a fresh, empty cache."""
        if self.kv_bits and self._kv_group is None:
            self._kv_group = caches.quantization_group(self.model) or 0  # 0: this model's keys cannot be
        bits = self.kv_bits if self._kv_group else None
        self.cache = caches.make_cache(self.model, bits, self._kv_group or None)
        self.tokens: list[int] = []
        self.images: Shift | None = None
        self._pending = 0
        self._turns: list[Checkpoint] = []
        self._round: Checkpoint | None = None

    @property
    def pending(self) -> int:
        """Inputs fed whose ids are not known yet (a verify pass's draft, until `resolve`)."""
        return self._pending

    @property
    def supported(self) -> bool:
        """Whether every layer's cache can rewind (speculation needs it)."""
        return all(caches.supported(layer) for layer in self.cache)

    @property
    def holds_state(self) -> bool:
        """Whether some layer keeps recurrent state (linear attention, SSM), so rewinds return to checkpoints."""
        return any(caches.holds_state(layer) for layer in self.cache)

    def _needs_turn_checkpoints(self) -> bool:
        return any(caches.holds_state(layer) or caches.slides(layer) for layer in self.cache)

    def checkpoint_turn(self) -> None:
        """Remember this point (a turn's prompt is in) for a later Regenerate or edit, if rewinds need it."""
        if self._needs_turn_checkpoints() and not self._pending:
            self._turns = [c for c in self._turns if c.position < len(self.tokens)][-(TURN_CHECKPOINTS - 1) :]
            self._turns.append(Checkpoint(len(self.tokens), [caches.snapshot(layer, whole=True) for layer in self.cache]))

    def checkpoint_round(self) -> None:
        """Remember this point before a pass whose tokens may be rejected, if rewinds cannot simply drop them."""
        if self.holds_state and not self._pending:
            self._round = Checkpoint(len(self.tokens), [caches.snapshot(layer, whole=False) for layer in self.cache])

    def rewind_to(self, length: int) -> None:
        """Make the cache hold exactly tokens[:length] or fewer: drop, return to a checkpoint, or start over."""
        n = len(self.tokens) - length
        if n <= 0:
            return
        if all(caches.can_drop(layer, n) for layer in self.cache):
            for layer in self.cache:
                caches.drop(layer, n)
            self._truncate(length, "dropped")
            return
        checkpoint = self._checkpoint_before(length)
        if checkpoint is None:
            self.reset()
            self.rewinds["reset"] += 1
            return
        back = len(self.tokens) - checkpoint.position
        for layer, saved in zip(self.cache, checkpoint.saved):
            caches.restore(layer, saved, back)
        self._truncate(checkpoint.position, "restored")

    def _checkpoint_before(self, length: int) -> Checkpoint | None:
        """The latest checkpoint at or before `length` that every layer can return to."""
        candidates = [c for c in [*self._turns, self._round] if c is not None and c.position <= length]
        for checkpoint in sorted(candidates, key=lambda c: -c.position):
            back = len(self.tokens) - checkpoint.position
            if all(caches.restorable(layer, s, back) for layer, s in zip(self.cache, checkpoint.saved)):
                return checkpoint
        return None

    def _truncate(self, length: int, kind: str) -> None:
        del self.tokens[length:]
        if self.images is not None and length <= self.images.start:
            self.images = None
        self._turns = [c for c in self._turns if c.position <= length]
        if self._round is not None and self._round.position > length:
            self._round = None
        self.rewinds[kind] += 1

    def shared_with(self, ids: list[int], images: ImageKey | None = None) -> int:
        """How many first positions of a prompt (`ids`, showing `images`) the cache holds as the prompt's own pass
        would compute them (`shared_prefix`)."""
        return shared_prefix(self.tokens, self.images, ids, images)

    def catch_up(self, context: list[int], max_tail: int = 1) -> list[int]:
        """Make the cache hold all of `context` but a short tail, and return that tail (1 to `max_tail` ids).

        The caller feeds the tail to its next forward pass, whose last logits then follow the whole context.
        """
        steps = self.catch_up_steps(context, max_tail)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def catch_up_steps(self, context: list[int], max_tail: int = 1) -> Generator[tuple[int, int], None, list[int]]:
        """`catch_up` one prefill chunk at a time, yielding (tokens cached, len(context)) before the first chunk and
        after each: a progress report starts with the click, not after a first chunk that can take seconds (one
        chunk holds a whole short prompt).

        What the cache already shares with `context` is kept; what differs is rewound; what is missing beyond
        the tail is prefilled in chunks of up to `prefill_step_size` (fewer as the context grows:
        `prefill_chunk_length`), evaluating each chunk so memory stays flat.
        Returns the tail.
        """
        assert not self._pending, "resolve() the pending tokens before catching up"
        assert context, "an empty context has no next-token logits"
        self.rewind_to(min(common_prefix_length(self.tokens, context), len(context) - 1))
        position = len(self.tokens)
        end = len(context) - min(len(context) - position, max(max_tail, 1))
        if position < end:
            yield position, len(context)
        step = self.prefill_step_size or default_prefill_step()
        while position < end:
            length = prefill_chunk_length(step, position, self.equal_cost_context)
            chunk = context[position : min(position + length, end)]
            self._run(mx.array(chunk, dtype=mx.uint32), chunk)
            mx.eval([c.state for c in self.cache], self.listener.state if self.listener else [])
            position += len(chunk)
            mx.clear_cache()
            yield position, len(context)
        return context[position:]

    def forward(self, inputs: mx.array, ids: list[int] | None = None) -> mx.array:
        """Run the model on `inputs` (1-D ids) after the cached tokens; return (len(inputs), V) logits.

        Pass `ids` when the inputs are known on the host; otherwise they count as pending until `resolve`.
        """
        return self._run(inputs, ids)

    def _run(self, inputs: mx.array, ids: list[int] | None) -> mx.array:
        """One pass over `inputs` after the cached positions, heard by the listener; records their ids."""
        shift = {"shift": self.images} if self.images is not None else {}  # only a vision target's cache holds images
        return self._pass(lambda: self.model(inputs[None], cache=self.cache, **shift), inputs.shape[0], ids)[0]

    def _pass(self, run: Callable[[], mx.array], length: int, ids: list[int] | None) -> mx.array:
        """`run()`, a pass over `length` positions after the cached ones, heard by the listener; records their ids
        (None: pending until `resolve`)."""
        position = len(self.tokens) + self._pending
        self.passes += 1
        states: list[mx.array] = []
        if self.listener is None:
            logits = run()
        else:
            logits, states = run_with_taps(self.model, run, self.listener.taps)
        if ids is None:
            self._pending += length
        else:
            self.tokens.extend(ids)
        if self.listener is not None:
            self.listener.heard(position, [s[0] for s in states])
        return logits

    def feed(self, ids: list[int], run: Callable[[], mx.array]) -> mx.array:
        """A pass the caller runs on this cache itself (a vision target's image embeddings, which are no ids),
        recorded as the positions of `ids` and heard by the listener like any other (a drafter that reads the
        target's hidden states sees the image through them)."""
        assert not self._pending, "resolve() the pending tokens before feeding"
        logits = self._pass(run, len(ids), ids)
        mx.eval([c.state for c in self.cache], self.listener.state if self.listener else [])
        return logits

    def fork(self, length: int) -> CachedModel | None:
        """A twin holding the first `length` cached positions (resolved ids, then pending ones), whose passes
        leave this cache as it is; None unless every layer is a plain KV cache (SSD's pre-drafts).

        The twin's layers view this cache's keys and values; its first write copies what it keeps."""
        resolved = min(length, len(self.tokens))
        if length - resolved > self._pending or not all(type(layer) is KVCache for layer in self.cache):
            return None
        twin = CachedModel.__new__(CachedModel)
        twin.__dict__.update(self.__dict__)
        twin.cache = [_kv_prefix(layer, length) for layer in self.cache]
        twin.tokens = self.tokens[:resolved]
        twin._pending = length - resolved
        twin._turns, twin._round = [], None
        twin.listener = None  # a twin's passes are guesses about positions, never the target's own
        return twin

    def adopt(self, twin: CachedModel) -> None:
        """Take a twin's cache and ids as this one's (an SSD hit: the pre-draft's context is the real one)."""
        self.cache, self.tokens, self._pending, self.images = twin.cache, twin.tokens, twin._pending, twin.images
        self._turns, self._round = [], None

    def discard_pending(self) -> None:
        """After an interrupted pass whose inputs were never resolved, start over rather than guess the ids."""
        if self._pending:
            self.reset()

    def resolve(self, ids: list[int]) -> None:
        """Record the ids of inputs fed while only known lazily (in the order they were fed)."""
        assert len(ids) == self._pending, (len(ids), self._pending)
        self.tokens.extend(ids)
        self._pending = 0


def _kv_prefix(layer: KVCache, length: int) -> KVCache:
    """A new KVCache over the first `length` positions of `layer` (new array objects: writes never reach it)."""
    twin = KVCache()
    if length and layer.keys is not None:
        twin.keys, twin.values = layer.keys[..., :length, :], layer.values[..., :length, :]
        twin.offset = length
    return twin
