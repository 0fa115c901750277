"""A long session as a restless user has it: 300 answers on the tiny models with conversation switches, Stop,
Regenerate, edits and deletes mixed in at random (a fixed seed). Never stuck, no thread left behind, memory flat,
the database intact.

Memory is measured from answer 100 on. Before that the process grows to its working set: the C allocator keeps
the pools the longest conversations so far needed (their prefill), and Qt fills its caches. Measured while this
test was written: Python's own allocations grew 0.2 MB over answers 100-400 (tracemalloc), MLX's 2 MB stayed
flat, and 400 plain answers after the first 100 kept RSS within 0.1 MB.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

ANSWERS = 300


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def wait_idle(qtbot, window) -> None:
    """Never stuck: the answer ends, and the window is ready for the next message."""
    qtbot.waitUntil(lambda: not window.session.busy, timeout=30_000)
    assert window.send_button.text() == "Send" and window.send_button.isEnabled()


class RestlessUser:
    """Picks one of a user's actions at random and does it the way the window offers it."""

    def __init__(self, window, qtbot, seed: int = 7) -> None:
        self.window, self.qtbot, self.rng = window, qtbot, random.Random(seed)
        self.answers = 0

    def ask(self, text: str) -> None:
        self.window.input.setPlainText(text)
        self.window.send()
        self.answers += 1

    def act(self) -> None:
        w, rng = self.window, self.rng
        action = rng.choices(["ask", "new", "switch", "stop", "regenerate", "edit", "delete_message", "delete_chat"],
                             [50, 8, 10, 8, 8, 6, 5, 5])[0]
        chats = [w.conversations.list.item(i).data(0x0100) for i in range(w.conversations.list.count())]
        messages = w.chat.messages
        if action == "new":
            w.new_conversation()
        elif action == "switch" and chats:
            w.open_conversation(rng.choice(chats))
        elif action == "stop":
            self.ask(f"Tell me a long story, number {self.answers}")
            self.qtbot.waitUntil(lambda: w.session.answer is None or bool(w.session.answer.text), timeout=30_000)
            w.stop()
        elif action == "regenerate" and messages and messages[-1].role == "assistant":
            w.regenerate()
            self.answers += 1
        elif action == "edit" and messages and messages[0].role == "user":
            w.edit_message(messages[0].message_id, f"Edited question {self.answers}")
            self.answers += 1
        elif action == "delete_message" and messages:
            w.delete_message(rng.choice(messages).message_id)
        elif action == "delete_chat" and chats:
            w.delete_conversation(rng.choice(chats))
        else:
            self.ask(f"Question {self.answers}: what is {rng.randint(1, 99)} plus {rng.randint(1, 99)}?")
        wait_idle(self.qtbot, w)


@pytest.mark.soak
def test_three_hundred_answers_with_everything_mixed_in(make_window, qtbot) -> None:
    threads_before = threading.active_count()
    window = make_window(max_tokens=8)
    user = RestlessUser(window, qtbot)
    baseline = None
    while user.answers < ANSWERS:
        user.act()
        if baseline is None and user.answers >= 100:  # warmed up (see the module's docstring)
            baseline = rss_bytes()
    growth = (rss_bytes() - baseline) / baseline
    store = window.session.store
    assert store.check_integrity()
    for info in store.conversations():
        thread = store.messages(info.id)
        assert all(m.role in ("user", "assistant") for m in thread)
    window.close()
    assert window.session.engine_thread.isFinished() and window.session.download_thread.isFinished()
    qtbot.waitUntil(lambda: threading.active_count() == threads_before, timeout=60_000)  # threads end as they notice
    assert growth < 0.05, f"RSS grew {growth:.1%} from answer 100 to answer {ANSWERS}"
