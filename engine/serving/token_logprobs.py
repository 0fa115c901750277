"""Log-probabilities on the wire: what a request asks for, and the engine's `TokenLogprob`s in OpenAI's shapes.

Chat completions ask with `logprobs: true` and `top_logprobs: N` (0 to 20) and get, per token, {token, logprob,
bytes, top_logprobs: [{token, logprob, bytes}]} under `choices[].logprobs.content`, whole or chunk by chunk.
Legacy completions ask with `logprobs: N` (0 to 5) and get parallel lists {tokens, token_logprobs,
top_logprobs: [{token: logprob}], text_offset}. The figures are the target's (`decoding/logprobs.py`); a token's
text and bytes come from llguidance's view of the tokenizer, which knows the raw bytes of a token that holds
part of a character (shown as "bytes:\\xe2\\x80", as OpenAI does).
"""

from __future__ import annotations

from typing import Any

from ..events import TokenLogprob
from ..params import MAX_TOP_LOGPROBS
from .api_error import ApiError, typed

MAX_COMPLETION_LOGPROBS = 5  # OpenAI's limit on the legacy `logprobs`
Entry = dict[str, Any]  # one token's logprobs in the chat shape


def requested(body: dict[str, Any], endpoint: str) -> int | None:
    """How many alternatives the request wants with each token's logprob; None when it wants no logprobs."""
    if endpoint == "completions":
        count = typed(body, "logprobs", int, None)
        if count is not None and not 0 <= count <= MAX_COMPLETION_LOGPROBS:
            raise ApiError(400, f"'logprobs' must be between 0 and {MAX_COMPLETION_LOGPROBS}, not {count}.", param="logprobs")
        return count
    wanted = typed(body, "logprobs", bool, False)
    top = typed(body, "top_logprobs", int, None)
    if top is not None and not 0 <= top <= MAX_TOP_LOGPROBS:
        raise ApiError(400, f"'top_logprobs' must be between 0 and {MAX_TOP_LOGPROBS}, not {top}.", param="top_logprobs")
    if top and not wanted:
        raise ApiError(400, "'top_logprobs' needs 'logprobs': true.", param="top_logprobs")
    return (top or 0) if wanted else None


class TokenNames:
    """Token ids as the wire names them: the token's text and its bytes.

    Args:
        tokenizer: mlx-lm's tokenizer wrapper of the served model.
        vocab_size: the width of its logits.
    """

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        from ..decoding.constraint import grammar_tokenizer

        self._view = grammar_tokenizer(tokenizer, vocab_size)

    def _named(self, token: int, logprob: float) -> Entry:
        data = bytes(self._view.decode_bytes([token]))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = "bytes:" + "".join(f"\\x{b:02x}" for b in data)
        return {"token": text, "logprob": logprob, "bytes": list(data)}

    def unscored(self, token: int) -> Entry:
        """A token with no scores (a prompt's first, which nothing comes before): its name, and null for the rest."""
        return {**self._named(token, 0.0), "logprob": None, "top_logprobs": None}

    def entry(self, logprob: TokenLogprob) -> Entry:
        """One token in the chat shape: its name, logprob and bytes, and its alternatives'."""
        entry = self._named(logprob.token, logprob.logprob)
        entry["top_logprobs"] = [self._named(token, value) for token, value in logprob.top]
        return entry


def chat_logprobs(entries: list[Entry]) -> dict[str, Any]:
    """A choice's (or a chunk's) `logprobs` in chat completions."""
    return {"content": entries, "refusal": None}


def completion_logprobs(entries: list[Entry], offset: int) -> dict[str, Any]:
    """A choice's `logprobs` in legacy completions, for tokens whose text starts at character `offset`."""
    offsets = []
    for entry in entries:
        offsets.append(offset)
        offset += len(entry["token"])
    return {"tokens": [e["token"] for e in entries], "token_logprobs": [e["logprob"] for e in entries],
            "top_logprobs": [None if e["top_logprobs"] is None else {t["token"]: t["logprob"] for t in e["top_logprobs"]}
                             for e in entries],
            "text_offset": offsets}
