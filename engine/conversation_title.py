"""A chat's title: the opening of its first question, until the user renames it.

Editing the first question starts a new branch from the top, and the chat then shows that branch: an automatic
title follows the first question shown (else the list names the chat after a question it no longer shows). A
title the user chose stays. No column says which a title is: it is automatic when it is the automatic title of
one of the chat's first questions (a rename to exactly that text reads the same, and may as well behave so).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Protocol

TITLE_LENGTH = 60  # characters: what the conversation list shows of a question


class Message(Protocol):
    role: str
    content: str


class TitledStore(Protocol):
    """What retitling reads and writes of `conversations.ConversationStore`: named here rather than imported,
    because the store calls this module whenever a first question changes."""

    db: sqlite3.Connection

    def messages(self, conversation_id: int) -> Sequence[Message]: ...

    def title(self, conversation_id: int) -> str: ...

    def rename(self, conversation_id: int, title: str) -> None: ...


def automatic_title(question: str) -> str:
    """The title a chat gets from its first question: on one line (the list shows one), a long one cut after its last
    whole word that fits, with "…" (cut mid-word, "The quick br", it read as a typo in the delete dialog and in an
    export's file name)."""
    line = " ".join(question.split())
    if len(line) <= TITLE_LENGTH:
        return line
    cut = line[: TITLE_LENGTH - 1]
    words = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return words.rstrip(" ,;:.-") + "…"


def _earlier_title(question: str) -> str:
    """The automatic title as versions before the word-boundary cut wrote it (chats saved then keep following)."""
    return " ".join(question.split())[:TITLE_LENGTH].rstrip()


def followed_title(title: str, first_questions: list[str], shown_question: str) -> str:
    """The title once `shown_question` is the first question shown: its automatic title when `title` is one of
    `first_questions`' automatic titles (as made now or before); `title` itself when the user chose it."""
    automatic = {made(question) for question in first_questions for made in (automatic_title, _earlier_title)}
    return automatic_title(shown_question) if title in automatic else title


def follow_first_question(store: TitledStore, conversation_id: int, deleted: str = "") -> None:
    """After the first question shown changed (an edit, a branch switch, a branch deleted): retitle the chat.
    `deleted`: a first question just deleted, whose title counts as automatic too (the chat still has it)."""
    firsts = [deleted] if deleted else []
    firsts += [row[0] for row in store.db.execute(
        "SELECT content FROM messages WHERE conversation_id = ? AND parent_id IS NULL AND role = 'user'",
        (conversation_id,),
    )]
    thread = store.messages(conversation_id)
    title = store.title(conversation_id)
    if thread and thread[0].role == "user" and followed_title(title, firsts, thread[0].content) != title:
        store.rename(conversation_id, automatic_title(thread[0].content))
