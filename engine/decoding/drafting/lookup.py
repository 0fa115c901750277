"""Lookup drafting: propose what followed the context's end before, in this context or in the user's history.

Answers that reuse their input (editing code, fixing a given text, summarising, extracting) copy long runs of
the prompt; matching the last few tokens against earlier context finds those runs at almost no cost and without
a draft model. transformers calls it `prompt_lookup_num_tokens`, vLLM `ngram` speculation. SuffixDecoding
(Oliaro et al., 2025) adds the user's other conversations (`history_lookup.py`) and sizes each draft by how much
evidence it has: at most SPEC_FACTOR tokens per matched token, and only while the share of earlier occurrences
that agree with the whole draft stays at or above MIN_PATH_SHARE.

The context's index is incremental: every position is indexed once as the context grows, so a lookup costs O(n)
per round however long the conversation is.

`make_drafter` is the kind's maker (`maker.py`): it says which saved chats an answer's lookup reads (`history`).
"""

from __future__ import annotations

import math

from .. import clock
from ..policy.draft_length import DraftPolicy
from .drafter import NO_DRAFT, Draft, point_draft
from .history_lookup import DraftHistory, FilteredHistory
from .maker import MakerInputs
from .suffix_index import MAX_MATCH, Continuation

MAX_NGRAM = 4
MIN_NGRAM = 2
SPEC_FACTOR = 2.0  # draft tokens per matched token (SuffixDecoding's max_spec_factor)
MIN_PATH_SHARE = 0.1  # the least share of earlier occurrences agreeing with a whole draft
MIN_PROMISING = 4  # a declined match at least this long leaves the next pass unqueued (see `idle`)
LONG_MATCH = 8  # matches at least this long are drafted from under an estimate of their own
OWN_SUPPORT = 2  # the answer's own tokens a history match must cover before the history drafts (see `_best_match`)
# Lookup's acceptance depends on the evidence and is bursty: a long match (the answer is copying something) is
# accepted far more often than a 2-gram that happens to recur, and once a copy is under way it tends to go on.
# The policy keeps separate estimates for the three, so that a chat where short matches fail does not stop
# the drafting of a long copy in the next answer (the estimates are kept across answers).
LOOKUP, LOOKUP_LONG, LOOKUP_COPYING = "lookup", "lookup+long", "lookup+copying"


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
        return self.match(max_tokens).tokens

    def match(self, max_tokens: int) -> Continuation:
        """The continuation of the latest earlier occurrence of the longest matching suffix, with the length of
        that match followed back as far as it goes (up to MAX_MATCH), which the n-gram keys alone cannot tell."""
        tokens = self.tokens
        end = len(tokens)
        for n in range(min(self.max_ngram, end), self.min_ngram - 1, -1):
            latest, previous = self._ends.get(tuple(tokens[end - n : end]), (-1, -1))
            start = previous if latest == end else latest
            if start > 0:
                found = tokens[start : start + max_tokens]
                return Continuation(_matched_back(tokens, start, end), found, [1.0] * len(found), 1)
        return Continuation(0, [], [], 0)


def _matched_back(tokens: list[int], start: int, end: int) -> int:
    """How many tokens before `start` equal those before `end` (the occurrence and the context's end)."""
    n = 0
    while n < MAX_MATCH and start - 1 - n >= 0 and tokens[start - 1 - n] == tokens[end - 1 - n]:
        n += 1
    return n


def draftable(found: Continuation, limit: int) -> list[int]:
    """The part of a continuation worth drafting: scaled with the match length, cut where too few earlier
    occurrences agree with the draft so far."""
    longest = min(limit, len(found.tokens), math.ceil(SPEC_FACTOR * found.match_length))
    share, count = 1.0, 0
    for confidence in found.confidence[:longest]:
        share *= confidence
        if share < MIN_PATH_SHARE:
            break
        count += 1
    return found.tokens[:count]


class PromptLookupDrafter:
    """Drafts from the context itself and from the history; its q is a point mass on each proposed token.

    Args:
        policy: chooses how many of the found tokens to draft.
        history: the user's other conversations (None: the context only).
    """

    def __init__(self, policy: DraftPolicy, history: DraftHistory | FilteredHistory | None = None) -> None:
        self.policy = policy
        self.history = history
        self.index = NgramIndex()
        self._prompt_length = 0  # where the answer's own tokens begin in the context
        self._copying = False
        self._declined = False  # it found a match worth drafting only without a queued pass

    @property
    def idle(self) -> bool:
        """Whether the target's next pass may be queued early. Not after the policy declined a match of at least
        MIN_PROMISING tokens because a queued pass made it dear: the next round can then draft in one pass."""
        return not self._declined

    def start(self, context: list[int]) -> None:
        """Index a new generation's context (the prompt)."""
        self.index = NgramIndex()
        self.index.extend(context)
        self._prompt_length = len(context)
        self._copying = self._declined = False

    def propose(self, context: list[int], limit: int, split_pass: bool = False) -> Draft:
        start = clock.now()
        self.index.extend(context[len(self.index.tokens) :])
        found, source = self._best_match(context, limit)
        candidates = draftable(found, limit)
        k = self.policy.choose(source, len(candidates), split_pass) if candidates else 0
        self._declined = not k and bool(candidates) and found.match_length >= MIN_PROMISING and split_pass
        return point_draft(candidates[:k], source, clock.now() - start) if k else NO_DRAFT

    def _best_match(self, context: list[int], limit: int) -> tuple[Continuation, str]:
        """The longer match of the context's own index and the history's, and the policy's name for its kind.

        On a tie the context's latest occurrence wins (it is the most recent text) unless the history saw the
        match several times and mostly went on the same way: an edit asked for again in a new chat has the
        original text in its prompt once and the edited text in earlier answers several times.

        The history is read only once its match covers OWN_SUPPORT of the answer's own tokens: at an answer's
        opening the context ends in the chat template's "assistant" header, which every saved chat shares, so
        the history would draft some other chat's opening ("The capital of France") for an unrelated question.
        """
        found = self.index.match(limit)
        own_tokens = len(context) - self._prompt_length
        if self.history is not None and own_tokens >= OWN_SUPPORT:
            other = self.history.continuation(context, limit)
            if other.match_length >= OWN_SUPPORT and (
                other.match_length > found.match_length
                or (other.match_length == found.match_length and other.occurrences >= 2 and other.confidence[:1] >= [0.5])
            ):
                found = other
        if self._copying:
            return found, LOOKUP_COPYING
        return found, LOOKUP_LONG if found.match_length >= LONG_MATCH else LOOKUP

    def speculate(self, context: list[int], draft: Draft, verdict: object) -> int:
        """Drafts nothing ahead (SSD does, in `ssd.py`)."""
        return 0

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        """A copy is under way while lookup's drafts are accepted whole."""
        self._copying = draft.drafter == "lookup" and accepted == draft.count


def make_drafter(given: MakerInputs) -> PromptLookupDrafter:
    """Lookup in the context and, unless switched off, in the saved chats, for an answer."""
    return PromptLookupDrafter(given.policy, history(given))


def history(given: MakerInputs) -> DraftHistory | FilteredHistory | None:
    """The saved chats lookup drafts from: none when switched off; for a Compare run (`given.compared`: its prompt),
    without the conversations in which the compared question was asked (lookup would copy their answers, and the
    speedup shown would be the history's, not speculation's)."""
    if not given.params.history:
        return None
    pair = given.pair
    question = _last_user_message(given.compared)
    if not question:
        return pair.history
    ids = pair.tokenizer.encode(question, add_special_tokens=False)
    return pair.history.excluding(ids[1:-1] if len(ids) > 3 else ids)  # the template may merge its edges


def _last_user_message(prompt: object) -> str:
    """The text of the last user message of a prompt (a string is one), or "" for token ids and nothing."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (list, tuple)):
        users = [m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return users[-1] if users and isinstance(users[-1], str) else ""
    return ""
