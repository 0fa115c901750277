"""Undoing a delete puts the chat back as it was, its title too."""

from __future__ import annotations

from pathlib import Path

from app.delete_undo import delete_keeping_a_copy, restore
from engine.conversation_title import automatic_title
from engine.conversations import ConversationStore


def test_undoing_the_delete_of_the_first_question_shown_gives_its_title_back(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create(automatic_title("What is MLX?"))
    store.add_message(chat, "user", "What is MLX?")
    edited = store.add_message(chat, "user", "What is Metal?", parent_id=None)
    copy = delete_keeping_a_copy(store, chat, edited)
    assert store.title(chat) == "What is MLX?"
    assert restore(store, copy) == ""
    assert [m.content for m in store.messages(chat)] == ["What is Metal?"] and store.title(chat) == "What is Metal?"
