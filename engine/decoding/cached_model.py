"""A model together with its KV cache and the token ids that cache holds.

Knowing which ids are in the cache lets every caller simply ask for "the logits after this context" and pay
only for the tokens the cache lacks. That one rule gives three features without bookkeeping of their own:

- prompt caching across chat turns (the next turn shares a prefix with the last);
- exact rewinds after rejected drafts (the cache is trimmed back to the common prefix, O(1) in mlx-lm);
- a draft model catching up after rounds it sat out (it prefills what it missed).
"""

from __future__ import annotations

from typing import Generator

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache, trim_prompt_cache


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


class CachedModel:
    """An mlx-lm model, its prompt cache, and `tokens`, the ids whose keys and values the cache holds.

    Attributes:
        model: the mlx-lm model.
        cache: its mlx-lm prompt cache (one entry per layer).
        tokens: the ids in the cache, in order.
        trimmable: whether the cache can drop its last entries (False for recurrent/SSM layers).
        prefill_step_size: prompt tokens per forward pass when catching up on a long stretch of context.
    """

    def __init__(self, model: nn.Module, prefill_step_size: int = 512) -> None:
        self.model = model
        self.prefill_step_size = prefill_step_size
        self.cache = make_prompt_cache(model)
        self.tokens: list[int] = []
        self.trimmable = can_trim_prompt_cache(self.cache)
        self._pending = 0

    def reset(self) -> None:
        """Forget everything: a fresh, empty cache."""
        self.cache = make_prompt_cache(self.model)
        self.tokens = []
        self._pending = 0

    def rewind_to(self, length: int) -> None:
        """Drop cached entries past `length` (a cache that cannot trim starts over instead)."""
        drop = len(self.tokens) - length
        if drop <= 0:
            return
        if self.trimmable:
            trim_prompt_cache(self.cache, drop)
            del self.tokens[length:]
        else:
            self.reset()

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
        """`catch_up` one prefill chunk at a time, yielding (tokens cached, len(context)) after each chunk.

        What the cache already shares with `context` is kept; what differs is trimmed; what is missing beyond
        the tail is prefilled in chunks of `prefill_step_size`, evaluating each chunk so memory stays flat. Returns the
        tail.
        """
        assert not self._pending, "resolve() the pending tokens before catching up"
        assert context, "an empty context has no next-token logits"
        self.rewind_to(min(common_prefix_length(self.tokens, context), len(context) - 1))
        position = len(self.tokens)
        end = len(context) - min(len(context) - position, max(max_tail, 1))
        while position < end:
            chunk = context[position : min(position + self.prefill_step_size, end)]
            self.model(mx.array(chunk, dtype=mx.uint32)[None], cache=self.cache)
            mx.eval([c.state for c in self.cache])
            self.tokens.extend(chunk)
            position += len(chunk)
            mx.clear_cache()
            yield position, len(context)
        return context[position:]

    def forward(self, inputs: mx.array, ids: list[int] | None = None) -> mx.array:
        """Run the model on `inputs` (1-D ids) after the cached tokens; return (len(inputs), V) logits.

        Pass `ids` when the inputs are known on the host; otherwise they count as pending until `resolve`.
        """
        logits = self.model(inputs[None], cache=self.cache)[0]
        if ids is None:
            self._pending += inputs.shape[0]
        else:
            self.tokens.extend(ids)
        return logits

    def discard_pending(self) -> None:
        """After an interrupted pass whose inputs were never resolved, start over rather than guess the ids."""
        if self._pending:
            self.reset()

    def resolve(self, ids: list[int]) -> None:
        """Record the ids of inputs fed while only known lazily (in the order they were fed)."""
        assert len(ids) == self._pending, (len(ids), self._pending)
        self.tokens.extend(ids)
        self._pending = 0

