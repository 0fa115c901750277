"""Log-probabilities of emitted tokens under the target, packed into the read a decoder makes anyway.

A client asking for `logprobs` wants the target's distribution at each emitted token's position. Every decoder
already holds the target's logits for those positions (a speculative round's verify pass covers every draft
token and the one after), so the figures cost a log-softmax and a top-k on the device, and no read of their own:
`package` builds them lazily as one float32 vector the decoder concatenates to what it reads back, and `unpack`
takes them apart on the host. Ids travel as float32, exact up to 2**24, beyond any vocabulary.

They are the raw model's (log-softmax of its logits): before the sampling warp, a repetition penalty or an output
constraint, as vLLM reports them by default, so that they equal a plain forward pass over the same tokens.
"""

from __future__ import annotations

import mlx.core as mx

from ..arrays import float_list, int_item
from ..events import TokenLogprob


def width(top: int) -> int:
    """Floats per row of a package: the chosen token's logprob, then `top` ids and `top` logprobs."""
    return 1 + 2 * top


def package(logits: mx.array, chosen: mx.array, top: int) -> mx.array:
    """(rows * width(top),) float32, lazy: per row of (rows, V) `logits`, the logprob of `chosen` (rows,) and the
    `top` likeliest ids with their logprobs, likeliest first."""
    logprobs = logits.astype(mx.float32)
    logprobs = logprobs - mx.logsumexp(logprobs, axis=-1, keepdims=True)
    picked = mx.take_along_axis(logprobs, chosen.astype(mx.int32).reshape(-1, 1), axis=-1)
    parts = [picked]
    if top:
        best = mx.argpartition(-logprobs, kth=top - 1, axis=-1)[:, :top]
        best_logprobs = mx.take_along_axis(logprobs, best, axis=-1)
        order = mx.argsort(-best_logprobs, axis=-1)
        parts += [mx.take_along_axis(best, order, axis=-1).astype(mx.float32), mx.take_along_axis(best_logprobs, order, axis=-1)]
    return mx.concatenate(parts, axis=-1).reshape(-1)


def unpack(values: list[float], chosen: list[int], top: int) -> list[TokenLogprob]:
    """The host's `TokenLogprob`s of the first len(chosen) rows of a package read back as `values`."""
    out = []
    step = width(top)
    for row, token in enumerate(chosen):
        cells = values[row * step : (row + 1) * step]
        ids, logprobs = cells[1 : 1 + top], cells[1 + top :]
        out.append(TokenLogprob(token, cells[0], tuple((int(i), lp) for i, lp in zip(ids, logprobs))))
    return out


def with_token(logits: mx.array, token: mx.array, top: int | None) -> mx.array:
    """What a one-token step reads: the (1,) token itself, or with `top` set the token and its package as one
    float32 vector (so the logprobs cost no read of their own)."""
    if top is None:
        return token
    return mx.concatenate([token.astype(mx.float32), package(logits, token, top)])


def read_token(readable: mx.array, top: int | None) -> tuple[int, list[TokenLogprob]]:
    """The one read of a `with_token` vector: the token's id and (with `top` set) its logprobs."""
    if top is None:
        return int_item(readable), []
    values = float_list(readable)
    token = int(values[0])
    return token, unpack(values[1:], [token], top)
