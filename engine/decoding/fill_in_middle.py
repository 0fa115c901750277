"""Fill in the middle: the code between a prefix and a suffix, as editors ask a code model for it (OpenAI completions'
`suffix`: autocomplete at the cursor, with the rest of the file after it).

Code models are trained on documents cut into prefix, suffix and middle, marked by tokens of their own and laid out
prefix first (PSM): `<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>`, after which the model writes the
middle and ends it with one of its format's end tokens. The prompt is built from the ids of those tokens, never from
their text, so code that happens to contain the text is read as code. Formats (by their three markers): Qwen2.5-Coder
and Qwen3-Coder; StarCoder and StarCoder2; DeepSeek-Coder. Speculation is untouched: prompt lookup copies from both
sides of the cursor, which is where an edit's repeated names are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidParameterError


@dataclass(frozen=True)
class FimFormat:
    """One family's markers, and the tokens it may end a middle with (beside end-of-sequence)."""

    prefix: str
    suffix: str
    middle: str
    ends: tuple[str, ...]


FORMATS = (
    FimFormat("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
              ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<|fim_prefix|>")),
    FimFormat("<fim_prefix>", "<fim_suffix>", "<fim_middle>", ("<|endoftext|>", "<fim_pad>", "<file_sep>", "<fim_prefix>")),
    FimFormat("<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>", ("<｜end▁of▁sentence｜>", "<｜fim▁begin｜>")),
)


def fim_format(tokenizer: Any) -> FimFormat:
    """The format whose three markers are all special tokens of the tokenizer; InvalidParameterError naming the
    models that have one when none is."""
    added = tokenizer.get_added_vocab()
    for candidate in FORMATS:
        if all(marker in added for marker in (candidate.prefix, candidate.suffix, candidate.middle)):
            return candidate
    raise InvalidParameterError("This model has no fill-in-the-middle tokens, so it cannot fill in between a prompt and "
                                "a `suffix`: use a code model trained for it (Qwen2.5-Coder, StarCoder2, DeepSeek-Coder), "
                                "or send the prompt without a suffix.")


def fim_prompt_ids(tokenizer: Any, prefix: str | list[int], suffix: str) -> list[int]:
    """The prompt that asks for the middle: the markers' ids around the prefix's and suffix's tokens (a prefix given as
    token ids is taken as it is), after the tokenizer's beginning-of-sequence token when it writes one."""
    fim, added = fim_format(tokenizer), tokenizer.get_added_vocab()
    before = prefix if isinstance(prefix, list) else _code_ids(tokenizer, prefix)
    return _leading_specials(tokenizer) + [added[fim.prefix], *before, added[fim.suffix], *_code_ids(tokenizer, suffix), added[fim.middle]]


def fim_end_ids(tokenizer: Any) -> frozenset[int]:
    """The ids a middle ends at, besides end-of-sequence: its format's end tokens the vocabulary has."""
    fim, added = fim_format(tokenizer), tokenizer.get_added_vocab()
    return frozenset(added[token] for token in fim.ends if token in added)


def _code_ids(tokenizer: Any, text: str) -> list[int]:
    """The text's tokens with any special token's text in it split as plain text: code that quotes a marker
    ("<|fim_middle|>" in this very file) would otherwise end the prefix there."""
    return tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)


def _leading_specials(tokenizer: Any) -> list[int]:
    """What the tokenizer puts before a text's tokens (DeepSeek-Coder's beginning-of-sequence token; none for Qwen)."""
    plain, marked = tokenizer.encode("x", add_special_tokens=False), tokenizer.encode("x")
    return marked[: len(marked) - len(plain)] if marked[len(marked) - len(plain):] == plain else []
