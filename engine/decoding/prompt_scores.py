"""The target's log-probability of each token of a prompt given the ones before it: what OpenAI's completions return
for `echo` with `logprobs`, and how evaluation harnesses (lm-evaluation-harness's loglikelihood tasks) score a
continuation. A generation's own prefill keeps only the last position's logits, and may start from a prefix the
prompt cache held, so the scores come from a pass of their own over the whole prompt, on a cache of their own:
the pair's caches are left as they were.

The figures are the raw model's, as the emitted tokens' are (`logprobs.py`): a log-softmax of the logits, before
any warp. The pass runs in chunks, each packed on the device as the emitted tokens' figures are, so a long prompt
never holds its (tokens x vocabulary) logits at once.
"""

from __future__ import annotations

from collections.abc import Callable

import mlx.core as mx

from ..arrays import float_list
from ..errors import InvalidParameterError
from ..events import TokenLogprob
from . import logprobs
from .cached_model import CachedModel
from .pair import ModelPair

SCORE_CHUNK = 256  # prompt tokens per pass: (chunk x vocabulary) float32 logits at a time, 150 MB for Qwen's 152k


def score_prompt(pair: ModelPair, ids: list[int], top: int, cancel: Callable[[], bool] | None = None) -> list[TokenLogprob | None]:
    """Per prompt token, its logprob under the target given the tokens before it, with the `top` likeliest there;
    None for the first, which nothing comes before. `cancel` is polled between chunks: once it returns True the
    scores end where they got to (the request is gone, and its generation ends at once too)."""
    if pair.network_clock() is not None:
        raise InvalidParameterError("Scoring the prompt (echo with logprobs) needs the target on this Mac, not across Macs.")
    model = CachedModel(pair.target.model)
    scores: list[TokenLogprob | None] = [None]
    for start in range(0, len(ids) - 1, SCORE_CHUNK):
        if cancel is not None and cancel():
            break
        chunk = ids[start : start + SCORE_CHUNK]
        following = ids[start + 1 : start + 1 + len(chunk)]  # the token each position predicts
        rows = model.forward(mx.array(chunk, dtype=mx.uint32), ids=chunk)[: len(following)]
        packed = logprobs.package(rows, mx.array(following, dtype=mx.uint32), top)
        scores += logprobs.unpack(float_list(packed), following, top)
    return scores
