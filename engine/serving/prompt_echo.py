"""OpenAI completions' `echo`: the prompt in front of the answer, and with `logprobs` each prompt token's scores.

Evaluation harnesses score a continuation this way (lm-evaluation-harness's loglikelihood tasks send the context
and the continuation as one prompt, `echo: true`, `logprobs: 1`, and read the prompt tokens' `token_logprobs`). The
prompt comes back as the first piece of the answer's text: its tokens' entries go where the answer's go, so the
lists and `text_offset` run on over the answer, whole or streamed. The first token has no scores (nothing comes
before it): `null`, as OpenAI gives. Chat completions have no echo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .api_error import completions_only, typed
from .pieces import TextPiece
from .token_logprobs import TokenNames


def echo_requested(body: dict[str, Any], endpoint: str) -> bool:
    """Whether a request asks for its prompt echoed: completions only (a chat's `echo: true` is a 400)."""
    echo = typed(body, "echo", bool, False)
    if echo:
        completions_only("echo", endpoint)
    return echo


def echoed_prompt(pair: Any, prompt: str | list[int], names: TokenNames | None, top: int | None,
                  cancel: Callable[[], bool]) -> TextPiece:
    """The prompt as the answer's first piece of text (token ids as their text), with each of its tokens' entries when
    logprobs are asked for (`names`, `top`). On the thread that owns the pair: the scores are a pass of the target."""
    from ..decoding.prompt_scores import score_prompt

    ids = list(prompt) if isinstance(prompt, list) else pair.prompt_ids(prompt, chat=False)
    text = prompt if isinstance(prompt, str) else pair.tokenizer.decode(ids)
    if names is None or top is None:
        return TextPiece(text)
    scores = score_prompt(pair, ids, top, cancel)
    return TextPiece(text, tuple(names.entry(s) if s is not None else names.unscored(token) for token, s in zip(ids, scores)))
