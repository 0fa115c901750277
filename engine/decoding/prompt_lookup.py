"""Prompt-lookup drafting: propose what followed the last occurrence of the context's final n-gram.

Answers that reuse their input (editing code, fixing a given text, summarising, extracting) copy long runs of
the prompt; matching the last few tokens against earlier context finds those runs at almost no cost and without
a draft model. transformers calls it `prompt_lookup_num_tokens`, vLLM `ngram` speculation.

The index is incremental: every position is indexed once as the context grows, so a lookup costs O(n) per round
however long the conversation is.
"""

from __future__ import annotations

import time

from .draft import NO_DRAFT, Draft, point_draft
from .policy import DraftPolicy

MAX_NGRAM = 4
MIN_NGRAM = 2
# Prompt lookup's acceptance is bursty: once a copy is under way it tends to go on. The policy keeps a
# separate estimate for rounds that follow a fully accepted lookup round.
LOOKUP, LOOKUP_COPYING = "lookup", "lookup+copying"


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
    """Drafts from the context itself; its q is a point mass on each proposed token.

    Args:
        policy: chooses how many of the found tokens to draft.
    """

    # Its drafts cost nothing and need no queued pass: a target pass queued early serves them as p_1.
    idle = True

    def __init__(self, policy: DraftPolicy) -> None:
        self.policy = policy
        self.index = NgramIndex()
        self._copying = False

    def start(self, context: list[int]) -> None:
        """Index a new generation's context (the prompt)."""
        self.index = NgramIndex()
        self.index.extend(context)
        self._copying = False

    def propose(self, context: list[int], limit: int) -> Draft:
        start = time.perf_counter()
        self.index.extend(context[len(self.index.tokens) :])
        candidates = self.index.continuation(limit)
        source = LOOKUP_COPYING if self._copying else LOOKUP
        k = self.policy.choose(source, len(candidates)) if candidates else 0
        return point_draft(candidates[:k], source, time.perf_counter() - start) if k else NO_DRAFT

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        """A copy is under way while lookup's drafts are accepted whole."""
        self._copying = draft.drafter == "lookup" and accepted == draft.count
