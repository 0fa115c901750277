"""Prompt-lookup drafting: propose what followed the last occurrence of the context's final n-gram.

Answers that reuse their input (editing code, fixing a given text, summarising, extracting) copy long runs of
the prompt; matching the last few tokens against earlier context finds those runs at almost no cost and without
a draft model. transformers calls it `prompt_lookup_num_tokens`, vLLM `ngram` speculation.

The index is incremental: every position is indexed once as the context grows, so a lookup costs O(n) per round
however long the conversation is.
"""

from __future__ import annotations

MAX_NGRAM = 4
MIN_NGRAM = 2


class NgramIndex:
    """Where each n-gram (MIN_NGRAM <= n <= MAX_NGRAM) of a growing token list last ended, and before that.

    Attributes:
        tokens: the indexed token list (the context so far).
    """

    def __init__(self, max_ngram: int = MAX_NGRAM, min_ngram: int = MIN_NGRAM) -> None:
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.tokens: list[int] = []
        # n-gram -> (end of its latest occurrence, end of the occurrence before that); -1 for none.
        self._ends: dict[tuple[int, ...], tuple[int, int]] = {}

    def extend(self, new_tokens: list[int]) -> None:
        """Append tokens and index every n-gram that ends in them."""
        tokens = self.tokens
        for token in new_tokens:
            tokens.append(token)
            end = len(tokens)
            for n in range(self.min_ngram, min(self.max_ngram, end) + 1):
                key = tuple(tokens[end - n : end])
                latest, _ = self._ends.get(key, (-1, -1))
                self._ends[key] = (end, latest)

    def continuation(self, max_tokens: int) -> list[int]:
        """Up to `max_tokens` tokens that followed the latest earlier occurrence of the longest matching suffix.

        Returns [] when no suffix n-gram occurred before.
        """
        tokens = self.tokens
        end = len(tokens)
        for n in range(min(self.max_ngram, end), self.min_ngram - 1, -1):
            latest, previous = self._ends.get(tuple(tokens[end - n : end]), (-1, -1))
            start = previous if latest == end else latest
            if start > 0:
                return tokens[start : start + max_tokens]
        return []


class PromptLookupDrafter:
    """Drafts from the context itself; its q is a point mass on each proposed token."""

    source = "lookup"

    def __init__(self) -> None:
        self.index = NgramIndex()

    def start(self, context: list[int]) -> None:
        """Index a new generation's context (the prompt)."""
        self.index = NgramIndex()
        self.index.extend(context)

    def observe(self, context: list[int]) -> None:
        """Index what the last round appended to the context."""
        self.index.extend(context[len(self.index.tokens) :])

    def candidates(self, max_tokens: int) -> list[int]:
        """The proposal available now (possibly empty)."""
        return self.index.continuation(max_tokens)
