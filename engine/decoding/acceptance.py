"""The acceptance rule of speculative sampling (Leviathan et al. 2023; Chen et al. 2023).

Given draft tokens d_1..d_K drawn from the draft's warped distributions q_1..q_K, and the target's warped
distributions p_1..p_{K+1} from one verify pass:

    accept d_i with probability min(1, p_i(d_i) / q_i(d_i)), for i = 1.. until the first rejection;
    on a rejection at i, emit a correction drawn from norm(max(0, p_i - q_i)) and stop;
    if all K are accepted, emit a bonus token drawn from p_{K+1}.

Every emitted token is then distributed exactly as the target alone would emit it. Greedy decoding is the
special case where p and q are point masses: accept while d_i == argmax p_i, then emit argmax p.

mlx-lm instead samples the target and accepts only on equality ("sample-and-match"), which accepts with
probability sum(p*q) instead of sum(min(p, q)). Prompt lookup proposes without a distribution: its q is a
point mass on the proposed token, for which the rule accepts with probability p(d).

Lenient acceptance (seed 002's --delta, off by default) accepts with min(1, p / ((1 - δ) q)) instead: more
draft tokens survive, and the output is no longer the target's distribution (lossy).

Everything here is lazy MLX: the caller evaluates the result once per round, together with the draft. Besides
the verdict, each function returns p(d) and q(d) for every draft token (what the rule compared), for the
speculation trace; they come out of the same read.
"""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx


@dataclass
class Verdict:
    """What the acceptance rule decided for one draft (lazy arrays).

    Attributes:
        accepted: how many leading draft tokens were accepted.
        next_token: the correction (after a rejection) or the bonus (all accepted).
        p_draft, q_draft: (K,) the target's and the draft's probability of each draft token, after warping
            (greedy: p is 1 where the draft token is the target's argmax, else 0; q is 1).
    """

    accepted: mx.array
    next_token: mx.array
    p_draft: mx.array
    q_draft: mx.array


def point_mass(tokens: mx.array, vocab_size: int) -> mx.array:
    """q for a drafter that proposes tokens without a distribution (prompt lookup): one-hot rows."""
    return (mx.arange(vocab_size)[None, :] == tokens[:, None].astype(mx.int32)).astype(mx.float32)


def draft_probabilities(p: mx.array, q: mx.array, draft_tokens: mx.array) -> tuple[mx.array, mx.array]:
    """(p_i(d_i), q_i(d_i)) for each of the K draft tokens. p, q: (K, V) probabilities."""
    index = draft_tokens.astype(mx.int32)[:, None]
    return mx.take_along_axis(p, index, axis=-1)[:, 0], mx.take_along_axis(q, index, axis=-1)[:, 0]


def ratio(p_d: mx.array, q_d: mx.array, lenience: float = 0.0) -> mx.array:
    """min(1, p(d) / ((1 - lenience) q(d))): the exact rule at lenience 0, every token accepted at 1.

    d was drawn from q, so q(d) > 0 except by float underflow, when the ratio is effectively infinite."""
    if lenience >= 1.0:
        return mx.ones_like(p_d)
    return mx.minimum(1.0, p_d / mx.maximum((1.0 - lenience) * q_d, 1e-30))


def acceptance_probabilities(p: mx.array, q: mx.array, draft_tokens: mx.array) -> mx.array:
    """min(1, p_i(d_i) / q_i(d_i)) for each of the K draft tokens. p, q: (K, V) probabilities."""
    return ratio(*draft_probabilities(p, q, draft_tokens))


def residual_distribution(p: mx.array, q: mx.array) -> mx.array:
    """norm(max(0, p - q)) along the last axis: what a correction is drawn from after a rejection.

    Where p <= q everywhere (p == q), no rejection can happen with positive probability; p itself is
    returned so that float round-off never yields an all-zero row.
    """
    r = mx.maximum(p - q, 0.0)
    total = r.sum(axis=-1, keepdims=True)
    return mx.where(total > 0, r / mx.maximum(total, 1e-30), p)


def lenient_output(p: mx.array, q: mx.array, lenience: float) -> mx.array:
    """The distribution of the first token one round emits, for target p and draft q (both (V,)) at `lenience`.

    A draft token x ~ q is kept with probability a(x) = min(1, p(x) / ((1 - δ) q(x))); otherwise the correction
    comes from the residual. At δ = 0 this is p exactly; its distance from p is what lenience costs.
    """
    kept = q * ratio(p, q, lenience)
    return kept + (1.0 - kept.sum()) * residual_distribution(p, q)


def verify_sampled(target_logprobs: mx.array, draft_probs: mx.array, draft_tokens: mx.array, lenience: float = 0.0) -> Verdict:
    """One speculative step by rejection sampling.

    Args:
        target_logprobs: (K+1, V) warped log-probabilities of the target at the K draft positions and after.
        draft_probs: (K, V) the draft's warped probabilities the draft tokens were drawn from.
        draft_tokens: (K,) the draft tokens.
        lenience: δ of the lenient (lossy) rule; 0 is exact. A correction is still drawn from norm(max(0, p - q)),
            which is what p - q·min(1, p / ((1 - δ) q)) leaves wherever it is positive.

    Returns:
        The verdict: how many draft tokens were accepted, the correction or bonus token, p(d) and q(d).
    """
    k = draft_tokens.shape[0]
    p = mx.exp(target_logprobs)
    if k == 0:
        none = mx.zeros((0,), dtype=mx.float32)
        return Verdict(mx.array(0, dtype=mx.int32), mx.random.categorical(target_logprobs[0]).astype(mx.uint32), none, none)
    p_d, q_d = draft_probabilities(p[:k], draft_probs, draft_tokens)
    accepted = mx.random.uniform(shape=(k,)) < ratio(p_d, q_d, lenience)
    n = mx.cumprod(accepted.astype(mx.int32)).sum()
    # Row n of p against row n of q, where a zero row stands for "no draft at position K+1": the residual
    # of p_{K+1} against nothing is p_{K+1} itself, so one formula gives both correction and bonus.
    q_ext = mx.concatenate([draft_probs, mx.zeros((1, draft_probs.shape[-1]), dtype=draft_probs.dtype)])
    fallback = residual_distribution(mx.take(p, n, axis=0), mx.take(q_ext, n, axis=0))
    return Verdict(n, mx.random.categorical(mx.log(fallback)).astype(mx.uint32), p_d, q_d)


def verify_coupled(target_choices: mx.array, target_logprobs: mx.array, draft_probs: mx.array,
                   draft_tokens: mx.array) -> Verdict:
    """Seeded sampling (`sampling.Warper.coupled`): accept the longest prefix where each draft token is the target's
    own draw at its position, then emit the target's draw after it.

    Every emitted token is the target's draw, so the output is exactly distributed and independent of the draft.

    Args:
        target_choices: (K+1,) the target's draws (argmax of warped logp plus that position's noise).
        target_logprobs: (K+1, V) the warped log-probabilities they were drawn from (for p(d) in the trace).
        draft_probs: (K, V) the draft's warped probabilities (one-hot for prompt lookup).
        draft_tokens: (K,) the draft tokens.
    """
    k = draft_tokens.shape[0]
    matches = target_choices[:k] == draft_tokens.astype(target_choices.dtype)
    n = mx.cumprod(matches.astype(mx.int32)).sum()
    p_d, q_d = draft_probabilities(mx.exp(target_logprobs[:k]), draft_probs, draft_tokens)
    return Verdict(n, mx.take(target_choices, n), p_d, q_d)


def verify_greedy(target_choices: mx.array, draft_tokens: mx.array, lenience: float = 0.0) -> Verdict:
    """The temperature-0 case: accept the longest prefix where d_i == argmax p_i, then emit argmax p_{n+1}.

    Args:
        target_choices: (K+1,) the target's argmax at each verify position.
        draft_tokens: (K,) the draft tokens.
        lenience: only 1 changes greedy verification (p(d) is 0 or 1): then every draft token is accepted.
    """
    k = draft_tokens.shape[0]
    if k == 0:
        none = mx.zeros((0,), dtype=mx.float32)
        return Verdict(mx.array(0, dtype=mx.int32), target_choices[0], none, none)
    matches = target_choices[:k] == draft_tokens.astype(target_choices.dtype)
    p_d = matches.astype(mx.float32)
    if lenience >= 1.0:
        matches = mx.ones_like(matches)
    n = mx.cumprod(matches.astype(mx.int32)).sum()
    return Verdict(n, mx.take(target_choices, n), p_d, mx.ones((k,), dtype=mx.float32))
