"""Recent Responses, kept in memory so a stateful client can continue one by `previous_response_id`.

OpenAI's Responses API stores each response (unless `store: false`, as Codex sends) and lets the next request
name it instead of resending the conversation; LM Studio keeps them too. Here each stored response is the
conversation up to and including its answer, as chat messages (without the request's `instructions`, which do
not carry over to the next response, as OpenAI documents). The store is bounded twice: by count and by the
characters its conversations hold, dropping the least recently used first, so a long agent session cannot grow
it without limit. It lives as long as the process: a restarted server knows no earlier response.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

Messages = list[dict[str, Any]]
MAX_RESPONSES = 256
MAX_CHARS = 64_000_000  # about 64 MB of text over all kept conversations


class ResponseStore:
    """Conversations by response id, least recently used dropped first beyond either bound."""

    def __init__(self, max_responses: int = MAX_RESPONSES, max_chars: int = MAX_CHARS) -> None:
        self.max_responses, self.max_chars = max_responses, max_chars
        self._kept: OrderedDict[str, tuple[Messages, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()  # the app's server and its tests may render on more than one thread

    def remember(self, response_id: str, conversation: Messages) -> None:
        size = len(json.dumps(conversation, ensure_ascii=False))
        with self._lock:
            self._kept[response_id] = (conversation, size)
            self._chars += size
            while self._kept and (len(self._kept) > self.max_responses or self._chars > self.max_chars):
                _, (_, dropped) = self._kept.popitem(last=False)
                self._chars -= dropped

    def conversation(self, response_id: str) -> Messages | None:
        """The stored conversation (a copy), or None if it was never stored or has been dropped."""
        with self._lock:
            kept = self._kept.get(response_id)
            if kept is None:
                return None
            self._kept.move_to_end(response_id)
            return [dict(m) for m in kept[0]]

    @property
    def chars(self) -> int:
        return self._chars

    def __len__(self) -> int:
        return len(self._kept)


RECENT = ResponseStore()  # the process's store: every Responses request reads and writes this one
