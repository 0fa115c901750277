"""The warp: from a model's logits to the distribution decoding samples from.

Speculative decoding is exact only if the target's p and the draft's q are the distributions *after* the same
warping (penalties and logit bias, top-p, min-p, top-k, temperature). mlx-lm's samplers only sample; we need the warped
distribution itself, so we chain mlx-lm's own filter functions in the order `mlx_lm.sample_utils.make_sampler`
applies them and then apply the temperature. Sampling a token from `Warper.logprobs(...)` is therefore the
same draw as mlx-lm's sampler makes, which is what keeps our standard decoding equal to mlx-lm's.

A seeded answer samples differently (`coupled`): position i of the context draws its token as
argmax(warped logp_i + g_i), Gumbel noise g_i from a key made of the seed and i alone (Gumbel-max: exactly a
sample of p_i). The draft model draws with the same g_i, and the verify accepts a draft token iff the target's
own draw at its position is that token (`acceptance.verify_coupled`). Every emitted token is then the target's
draw at its position, whoever drafted what: a seed gives one answer whatever K the adaptive policy picks, the
drafter, or standard decoding (Daliri et al. 2024, drafter-invariant speculative decoding). The price is some
acceptance: a draft token survives with probability P(argmax(log q + g) = argmax(log p + g)), at least
(1 - TV) / (1 + TV) against the rejection rule's 1 - TV; prompt lookup's point mass loses nothing (p(d) either way).
"""

from __future__ import annotations

import mlx.core as mx
from mlx_lm.sample_utils import apply_min_p, apply_top_k, apply_top_p, make_logits_processors

from ..errors import InvalidParameterError
from ..params import GenerationParams


class Warper:
    """Applies one set of sampling settings to the logits of any model of a pair.

    Args:
        params: the generation settings.
        vocab_size: the width every distribution is brought to (the target's logits width), so that a draft
            whose embedding table is padded to another size still yields a q comparable with p.
    """

    def __init__(self, params: GenerationParams, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.greedy = params.greedy
        self._temperature = params.temperature
        self._top_p = params.top_p if 0 < params.top_p < 1 else None
        self._min_p = params.min_p if params.min_p > 0 else None
        self._top_k = params.top_k if 0 < params.top_k < vocab_size else None
        self._processors = _processors(params, vocab_size)
        self._context_size = params.repetition_context_size
        # Lenient acceptance is a rule of its own (it keeps tokens the target would not draw): not coupled.
        self.seed = params.seed if not params.greedy and params.lenience == 0 else None

    @property
    def coupled(self) -> bool:
        """Whether tokens are drawn with per-position noise from the seed (see the module's docstring)."""
        return self.seed is not None

    @property
    def history_size(self) -> int:
        """How many of the latest tokens the penalties look at."""
        return self._context_size

    @property
    def adjusts_logits(self) -> bool:
        """Whether logits are adjusted before the warp (penalties on earlier tokens, a logit bias): callers then
        pass the tokens before each row to `adjust_logits`."""
        return bool(self._processors)

    def fit_width(self, logits: mx.array) -> mx.array:
        """Bring logits of shape (L, V_model) to (L, vocab_size): cut padding ids or pad with -inf.

        Ids the target has no row for can never be emitted; masking them in the draft keeps q a distribution
        over the same ids as p.
        """
        width = logits.shape[-1]
        if width == self.vocab_size:
            return logits
        if width > self.vocab_size:
            return logits[..., : self.vocab_size]
        pad = mx.full((*logits.shape[:-1], self.vocab_size - width), -mx.inf, dtype=logits.dtype)
        return mx.concatenate([logits, pad], axis=-1)

    def adjust_logits(self, logits: mx.array, history: mx.array | None, new_tokens: mx.array | None) -> mx.array:
        """Apply the penalties and the logit bias to each row of (L, V) logits.

        Row i sees `history` followed by the first i of `new_tokens`: in a verify pass, position i has the
        draft tokens before it in its context, exactly as standard decoding would have generated them.
        """
        if not self._processors:
            return logits
        rows = []
        for i in range(logits.shape[0]):
            parts = [a for a in (history, new_tokens[:i] if new_tokens is not None else None) if a is not None]
            seen = mx.concatenate(parts)[-self._context_size :] if parts else mx.array([], dtype=mx.uint32)
            row = logits[i : i + 1]
            for processor in self._processors:
                row = processor(seen, row)
            rows.append(row)
        return mx.concatenate(rows, axis=0)

    def logprobs(self, logits: mx.array) -> mx.array:
        """Warped log-probabilities, float32, shape (L, V); filtered-out ids are -inf. Not for greedy."""
        x = logits.astype(mx.float32)
        x = x - mx.logsumexp(x, axis=-1, keepdims=True)
        if self._top_p is not None:
            x = apply_top_p(x, self._top_p)
        if self._min_p is not None:
            x = apply_min_p(x, self._min_p)
        if self._top_k is not None:
            x = apply_top_k(x, self._top_k)
        x = x * (1.0 / self._temperature)
        return x - mx.logsumexp(x, axis=-1, keepdims=True)

    def choose(self, logits: mx.array, position: int) -> tuple[mx.array, mx.array | None]:
        """The next token for each row and, when sampling, the warped log-probabilities it was drawn from.

        `position`: the index in the context of the token the first row chooses (row i chooses position + i);
        coupled sampling draws each position's token with that position's noise.
        """
        if self.greedy:
            return mx.argmax(logits, axis=-1).astype(mx.uint32), None
        logprobs = self.logprobs(logits)
        if self.coupled:
            return mx.argmax(logprobs + self.noise(position, logprobs.shape[0]), axis=-1).astype(mx.uint32), logprobs
        return mx.random.categorical(logprobs).astype(mx.uint32), logprobs

    def noise(self, position: int, rows: int) -> mx.array:
        """(rows, V) Gumbel noise of positions position.., each row from a key of the seed and its position only."""
        assert self.seed is not None
        return mx.stack([mx.random.gumbel(shape=(self.vocab_size,), key=mx.random.key(_mix(self.seed, position + i)))
                         for i in range(rows)])


def _processors(params: GenerationParams, vocab_size: int) -> list:
    """mlx-lm's logits processors for the settings, in its order (logit bias, then the repetition, presence and
    frequency penalties), each over the last `repetition_context_size` tokens; [] when none is set."""
    unknown = [token for token, _ in params.logit_bias if token >= vocab_size]
    if unknown:
        raise InvalidParameterError(f"logit_bias names token {unknown[0]}, which this model does not have: its ids run "
                                    f"from 0 to {vocab_size - 1}.")
    size = params.repetition_context_size
    return make_logits_processors(
        logit_bias=dict(params.logit_bias) or None,
        repetition_penalty=params.repetition_penalty if params.repetition_penalty != 1.0 else None,
        repetition_context_size=size,
        presence_penalty=params.presence_penalty or None,
        presence_context_size=size,
        frequency_penalty=params.frequency_penalty or None,
        frequency_context_size=size,
    )


def _mix(seed: int, position: int) -> int:
    """A 63-bit key seed from (seed, position) (splitmix64's finaliser): nearby positions get unrelated keys."""
    z = (seed * 0x9E3779B97F4A7C15 + position + 1) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) >> 1
