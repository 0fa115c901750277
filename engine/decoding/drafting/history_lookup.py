"""Drafting from the user's history: every saved conversation, as suffix indexes prompt lookup reads.

People's chats repeat each other: the same code edited again, the same document summarised anew, the same
boilerplate. `DraftHistory` holds the token ids of those conversations (for one tokenizer) and answers "what
most often followed the end of this context?" across all of them (`suffix_index.py`).

Two indexes keep updates cheap: the main one over everything known when it was last built, and a small one over
conversations added or grown since, rebuilt on each addition (its cost grows with its own size only). When the
small one passes RECENT_TOKENS, both are merged in a background thread; until it finishes the old indexes
answer. The whole history is bounded to `max_tokens` (the most recent conversations are kept).

A history belongs to one tokenizer (ids mean nothing across tokenizers): a loaded pair starts with an empty one
and `start_indexing` fills it from the saved conversations in a background thread, with a tokenizer of its
own, so neither the launch nor the engine's thread waits for it.

Thread rule: only numpy, Python and a tokenizer run here; nothing touches MLX arrays, so a plain thread is safe.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from ..prompt_ids import Message, prompt_token_ids
from .suffix_index import NO_CONTINUATION, Continuation, Document, SuffixIndex

log = logging.getLogger(__name__)

MAX_HISTORY_TOKENS = 4_000_000  # 80 MB of documents and index at most
RECENT_TOKENS = 32_768  # the recent index is rebuilt on each addition: ~50 ms at this size
KEY_PREFIX = 64  # conversations are grouped by their first tokens (system prompt and first message)


def document_key(tokens: Sequence[int]) -> str:
    """The group of a conversation's tokens: its later turns start the same way, so they are looked for there."""
    return hashlib.sha1(np.asarray(tokens[:KEY_PREFIX], dtype=np.int32).tobytes()).hexdigest()[:16]


def extends(tokens: np.ndarray, earlier: np.ndarray) -> bool:
    """Whether `tokens` continues `earlier` (a later turn of the same conversation)."""
    return len(earlier) <= len(tokens) and bool(np.array_equal(tokens[: len(earlier)], earlier))


class DraftHistory:
    """Token documents by key, bounded, with the suffix indexes over them.

    Args:
        max_tokens: the most tokens kept (older conversations are dropped first).
    """

    def __init__(self, max_tokens: int = MAX_HISTORY_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._documents: OrderedDict[str, np.ndarray] = OrderedDict()  # int32, 4 bytes a token
        self._main = SuffixIndex([])
        self._recent = SuffixIndex([])
        self._recent_keys: list[str] = []
        self._serial = 0  # makes each document's key unique within its group
        self._groups: dict[str, list[str]] = {}  # group (first tokens) -> the keys of its documents
        self._lock = threading.Lock()
        self._rebuilding: threading.Thread | None = None

    @property
    def tokens(self) -> int:
        return sum(len(d) for d in self._documents.values())

    @property
    def documents(self) -> int:
        return len(self._documents)

    @property
    def additions(self) -> int:
        """Conversations added so far, replaced versions included."""
        return self._serial

    @property
    def nbytes(self) -> int:
        """Memory the documents and their indexes hold."""
        return sum(d.nbytes for d in self._documents.values()) + self._main.nbytes + self._recent.nbytes

    def add(self, tokens: Sequence[int]) -> None:
        """Add a conversation, replacing the earlier versions of it that it extends (its earlier turns); two chats
        that merely start alike are both kept."""
        if not tokens:
            return
        with self._lock:
            key = self._put(tokens)
            self._trim()
            if key not in self._recent_keys:
                self._recent_keys.append(key)
            self._recent = SuffixIndex([self._documents[k] for k in self._recent_keys if k in self._documents])
        if self._recent.tokens > RECENT_TOKENS:
            self.rebuild(background=True)

    def add_many(self, documents: Iterable[Sequence[int]]) -> None:
        """Add many conversations and index them once (a launch reading the saved chats)."""
        with self._lock:
            for tokens in documents:
                if tokens:
                    self._put(tokens)
            self._trim()
        self.rebuild(background=False)

    def _put(self, tokens: Sequence[int]) -> str:
        """Store a conversation as the newest, dropping the documents it extends (the caller holds the lock);
        returns its key."""
        document = np.asarray(tokens, dtype=np.int32)
        group = document_key(tokens)
        members = [k for k in self._groups.get(group, []) if k in self._documents]
        for key in [k for k in members if extends(document, self._documents[k])]:
            del self._documents[key]
        self._serial += 1
        key = f"{group}:{self._serial}"
        self._documents[key] = document
        self._groups[group] = [k for k in members if k in self._documents] + [key]
        return key

    def _trim(self) -> None:
        total = self.tokens
        while total > self.max_tokens and len(self._documents) > 1:
            key, dropped = self._documents.popitem(last=False)
            total -= len(dropped)
            group = key.split(":")[0]
            self._groups[group] = [k for k in self._groups.get(group, []) if k != key]
            if not self._groups[group]:
                del self._groups[group]

    def rebuild(self, background: bool = False) -> None:
        """Index everything in the main index again and empty the recent one."""
        if background:
            if self._rebuilding is None or not self._rebuilding.is_alive():
                self._rebuilding = threading.Thread(target=self._rebuild, name="history-index", daemon=True)
                self._rebuilding.start()
            return
        self._rebuild()

    def _rebuild(self) -> None:
        with self._lock:
            documents = list(self._documents.values())
            keys = list(self._recent_keys)
        main = SuffixIndex(documents)
        with self._lock:
            self._main = main
            self._recent_keys = [k for k in self._recent_keys if k not in keys]
            self._recent = SuffixIndex([self._documents[k] for k in self._recent_keys if k in self._documents])

    def wait(self) -> None:
        """Until a background rebuild has finished (tests and benchmarks)."""
        thread = self._rebuilding
        if thread is not None:
            thread.join()

    def excluding(self, phrase: Sequence[int]) -> DraftHistory | FilteredHistory:
        """The history without the conversations in which `phrase` occurs (itself when none does).

        Compare runs a question again: its saved answers would be copied, and the speedup shown would be the
        history's, not speculation's (a new prompt at 1.1 tokens per pass read 5.00x, 100% accepted). Indexing
        the rest again costs about a second per million tokens, once per Compare that needs it.
        """
        with self._lock:
            documents = list(self._documents.values())
        kept = [d for d in documents if not contains(d, phrase)]
        return self if len(kept) == len(documents) else FilteredHistory(kept)

    def continuation(self, context: Sequence[int], max_tokens: int) -> Continuation:
        """The longer match of the two indexes (the recent one on a tie: it holds the newer versions)."""
        main, recent = self._main, self._recent  # a rebuild swaps them whole; read each once
        found = recent.continuation(context, max_tokens)
        other = main.continuation(context, max_tokens)
        best = found if found.match_length >= other.match_length else other
        return best if best.match_length else NO_CONTINUATION


class FilteredHistory:
    """Part of a history, indexed once: what `DraftHistory.excluding` leaves."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = len(documents)
        self._index = SuffixIndex(documents)

    def continuation(self, context: Sequence[int], max_tokens: int) -> Continuation:
        found = self._index.continuation(context, max_tokens)
        return found if found.match_length else NO_CONTINUATION


def contains(document: np.ndarray, phrase: Sequence[int]) -> bool:
    """Whether `phrase` occurs in `document` as consecutive tokens."""
    needle = np.asarray(phrase, dtype=np.int32)
    if not len(needle) or len(needle) > len(document):
        return False
    starts = np.flatnonzero(document[: len(document) - len(needle) + 1] == needle[0])
    return any(np.array_equal(document[s : s + len(needle)], needle) for s in starts)


def start_indexing(
    history: DraftHistory, tokenizer_folder: Path, chats: Callable[[], Iterable[Sequence[Message]]],
    idle: threading.Event | None = None,
) -> threading.Thread:
    """Tokenize the saved conversations with the model's tokenizer and index them, in a background thread.

    The thread loads its own tokenizer from the model folder: a tokenizer shared with the engine's thread could
    be called from both at once. Rendering templates holds Python's lock, so the thread waits for `idle` (the
    pair's: no answer running) before each step and never slows an answer down. A conversation that cannot be
    rendered is skipped; a failure leaves the history as it was (lookup still drafts from the context).
    """
    wait = idle.wait if idle is not None else (lambda: True)

    def index() -> None:
        try:
            from mlx_lm.utils import load_tokenizer

            wait()
            tokenizer = load_tokenizer(tokenizer_folder)
            documents = []
            for messages in chats():
                wait()
                try:
                    documents.append(prompt_token_ids(tokenizer, messages, chat=True))
                except Exception:  # noqa: BLE001 - one odd conversation must not stop the others
                    continue
            history.add_many(documents)
        except Exception:
            log.exception("indexing the saved conversations failed")

    thread = threading.Thread(target=index, name="history-indexing", daemon=True)
    thread.start()
    return thread
