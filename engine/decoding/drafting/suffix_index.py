"""A suffix array over many token documents: the longest match of a context's end, and what most often followed it.

SuffixDecoding (Oliaro et al., NeurIPS 2025) drafts from a suffix tree over earlier outputs. A pointer-based tree
in Python costs hundreds of bytes per node and a node per token per depth; a suffix array in numpy costs 12 bytes
per token (the text, the array, and its first-token column) and is built in one vectorised pass. The array is
built over the *reversed* text, so that matching the context's end backwards, one token further each step, only
narrows a range of the array (a binary search on one column), and each match's continuation is read forwards
from the original text.

Suffixes are sorted to a depth of MAX_MATCH tokens: longer matches count as MAX_MATCH long, which is all a
draft's length needs. Documents are separated by SEPARATOR, which no token equals, so no match or continuation
crosses from one document into another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

MAX_MATCH = 32  # the longest match looked for (and the depth the suffixes are sorted to)
MAX_CONTINUATION = 16  # the longest continuation read
MAX_OCCURRENCES = 128  # occurrences of a match whose continuations are counted (spread evenly over them)
SEPARATOR = -1
NARROW_BELOW = 2048  # ranges at most this long are matched against the whole pattern at once

Document: TypeAlias = "Sequence[int] | np.ndarray"  # a document's token ids: a list, or an int32 array as kept


@dataclass(frozen=True)
class Continuation:
    """What followed the longest match of a context's end.

    Attributes:
        match_length: how many of the context's last tokens matched (0: none).
        tokens: the most frequent continuation, one token after another.
        confidence: for each token, the share of the occurrences still following the path that continue with it.
        occurrences: how many places the match was found.
    """

    match_length: int
    tokens: list[int]
    confidence: list[float]
    occurrences: int


NO_CONTINUATION = Continuation(0, [], [], 0)


def concatenate(documents: Sequence[Document]) -> np.ndarray:
    """The documents as one int32 text, each followed by SEPARATOR."""
    parts: list[np.ndarray] = []
    for document in documents:
        parts.append(np.asarray(document, dtype=np.int32))
        parts.append(np.array([SEPARATOR], dtype=np.int32))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


def sorted_suffixes(text: np.ndarray, depth: int = MAX_MATCH) -> np.ndarray:
    """The start positions of `text`'s suffixes in order of their first `depth` tokens (prefix doubling)."""
    n = len(text)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    rank = text.astype(np.int64) + 2  # ranks >= 1; 0 is "past the end"
    order = np.argsort(rank, kind="stable")
    span = 1
    while span < depth:
        following = np.zeros(n, dtype=np.int64)
        following[: n - span] = rank[span:]
        order = np.lexsort((following, rank))
        keys_changed = np.ones(n, dtype=bool)
        keys_changed[1:] = (rank[order][1:] != rank[order][:-1]) | (following[order][1:] != following[order][:-1])
        new_rank = np.empty(n, dtype=np.int64)
        new_rank[order] = np.cumsum(keys_changed)
        rank = new_rank
        if rank.max() == n:  # every suffix already differs within `span` tokens
            break
        span *= 2
    return order.astype(np.int32)


class SuffixIndex:
    """An immutable index over token documents; build once, query from any thread.

    Args:
        documents: token id lists (conversations, answers).
    """

    def __init__(self, documents: Sequence[Document]) -> None:
        text = concatenate(documents)
        self.tokens = len(text)
        self.documents = len(documents)
        self._text = np.concatenate([text, np.full(MAX_CONTINUATION + 1, SEPARATOR, dtype=np.int32)])
        reversed_text = np.concatenate([text[::-1], np.full(MAX_MATCH + 1, SEPARATOR, dtype=np.int32)])
        self._reversed = reversed_text
        self._order = sorted_suffixes(text[::-1].copy())
        self._first = reversed_text[self._order] if self.tokens else np.zeros(0, dtype=np.int32)

    @property
    def nbytes(self) -> int:
        """Memory the index holds."""
        return self._text.nbytes + self._reversed.nbytes + self._order.nbytes + self._first.nbytes

    def match(self, context: Sequence[int], min_length: int = 1) -> tuple[int, np.ndarray]:
        """(length, positions): the longest match of the context's end, and where in the reversed text it starts."""
        none = (0, np.zeros(0, dtype=np.int32))
        if not self.tokens or not context:
            return none
        last = np.int32(context[-1])  # a Python int would make numpy convert the whole column first
        lo, hi = int(np.searchsorted(self._first, last, "left")), int(np.searchsorted(self._first, last, "right"))
        length, limit = 1, min(MAX_MATCH, len(context))
        while hi - lo > NARROW_BELOW and length < limit:  # a frequent token: narrow the range a step at a time
            column = self._reversed[self._order[lo:hi] + length]
            token = np.int32(context[-1 - length])
            lo, hi = lo + int(np.searchsorted(column, token, "left")), lo + int(np.searchsorted(column, token, "right"))
            length += 1
        if hi <= lo:
            return none
        positions = self._order[lo:hi]
        if length < limit:  # few places left: compare them all against the rest of the context at once
            pattern = np.asarray(context[-limit:][::-1][length:], dtype=np.int32)
            ahead = self._reversed[positions[:, None].astype(np.int64) + np.arange(length, limit)[None, :]]
            agree = np.cumprod(ahead == pattern[None, :], axis=1).sum(axis=1)
            best = int(agree.max())
            positions, length = positions[agree == best], length + best
        return (length, positions) if length >= min_length else none

    def continuation(self, context: Sequence[int], max_tokens: int = MAX_CONTINUATION, min_length: int = 2) -> Continuation:
        """The most frequent continuation of the longest match (of at least `min_length` tokens)."""
        length, positions = self.match(context, min_length)
        if not length:
            return NO_CONTINUATION
        found = len(positions)
        if found > MAX_OCCURRENCES:
            positions = positions[np.linspace(0, len(positions) - 1, MAX_OCCURRENCES).astype(np.int64)]
        starts = (len(self._reversed) - MAX_MATCH - 1) - positions.astype(np.int64)  # forward index after the match
        width = min(max_tokens, MAX_CONTINUATION)
        following = self._text[starts[:, None] + np.arange(width)[None, :]]
        tokens, confidence = most_frequent_path(following)
        return Continuation(length, tokens, confidence, found)


def most_frequent_path(following: np.ndarray) -> tuple[list[int], list[float]]:
    """Walk the continuations (rows) token by token, taking the most frequent next token among the rows that
    agree so far, until they run out (SEPARATOR ends a row)."""
    alive = np.ones(len(following), dtype=bool)
    tokens: list[int] = []
    confidence: list[float] = []
    for column in following.T:
        values = column[alive]
        values = values[values != SEPARATOR]
        if not len(values):
            break
        if (values == values[0]).all():  # the usual case once the paths agree
            best, count = int(values[0]), len(values)
        else:
            ids, counts = np.unique(values, return_counts=True)
            best, count = int(ids[int(np.argmax(counts))]), int(counts.max())
        tokens.append(best)
        confidence.append(count / int(alive.sum()))
        alive &= column == best
    return tokens, confidence
