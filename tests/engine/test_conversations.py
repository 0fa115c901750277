"""The conversations store: branches kept when editing or regenerating, search, per-chat system prompts, old
databases migrated, and a disk that refuses writes never losing what was typed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engine.conversations import ConversationStore


def thread(store: ConversationStore, conversation: int) -> list[str]:
    return [m.content for m in store.messages(conversation)]


def test_editing_an_earlier_message_starts_a_branch_and_keeps_the_old_one(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("Chat")
    question = store.add_message(chat, "user", "What is MLX?")
    store.add_message(chat, "assistant", "An array framework.")
    store.add_message(chat, "user", "By whom?")
    store.add_message(chat, "assistant", "Apple.")
    edited = store.add_message(chat, "user", "What is Metal?", parent_id=store.parent_of(question))  # a first message
    store.add_message(chat, "assistant", "A GPU API.")
    assert thread(store, chat) == ["What is Metal?", "A GPU API."]
    first = store.messages(chat)[0]
    assert (first.id, first.branch, first.branches) == (edited, 2, 2)
    store.select_branch(edited, -1)
    assert thread(store, chat) == ["What is MLX?", "An array framework.", "By whom?", "Apple."]
    store.select_branch(question, +1)
    assert thread(store, chat) == ["What is Metal?", "A GPU API."]


def test_regenerated_answers_are_siblings_and_deleting_one_shows_another(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("Chat")
    question = store.add_message(chat, "user", "Hi")
    first = store.add_message(chat, "assistant", "Hello!")
    second = store.add_message(chat, "assistant", "Hey there.", parent_id=question)
    assert thread(store, chat) == ["Hi", "Hey there."] and store.messages(chat)[1].branches == 2
    store.delete_message(second)
    assert thread(store, chat) == ["Hi", "Hello!"] and store.messages(chat)[1].id == first
    store.add_message(chat, "user", "Bye")
    store.delete_message(first)  # its branch goes with it
    assert thread(store, chat) == ["Hi"] and store.check_integrity()


def test_search_finds_titles_and_message_text(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    a, b = store.create("Rust lifetimes"), store.create("Cooking")
    store.add_message(b, "user", "How long to boil 100% of an egg_white?")
    assert [c.id for c in store.conversations("rust")] == [a]
    assert [c.id for c in store.conversations("100% of an egg_")] == [b]  # LIKE's wildcards are literal
    assert [c.id for c in store.conversations("100%%")] == []
    assert len(store.conversations("")) == 2


def test_each_chat_keeps_its_own_system_prompt(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    a, b = store.create("A"), store.create("B")
    store.set_system_prompt(a, "Answer in French.")
    store.close()
    again = ConversationStore(tmp_path / "c.sqlite3")
    assert again.system_prompt(a) == "Answer in French." and again.system_prompt(b) == ""


def test_a_database_from_before_branches_is_migrated_in_order(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(str(path))
    db.executescript(
        "CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL, position INTEGER NOT NULL, "
        "role TEXT NOT NULL, content TEXT NOT NULL, runs TEXT NOT NULL DEFAULT '[]', summary TEXT NOT NULL DEFAULT '', "
        "finish TEXT NOT NULL DEFAULT '');"
        "INSERT INTO conversations VALUES (1, 'Old', 0, 0);"
        "INSERT INTO messages (conversation_id, position, role, content) VALUES (1, 0, 'user', 'a'), (1, 1, 'assistant', 'b'), "
        "(1, 2, 'user', 'c');"
    )
    db.commit()
    db.close()
    store = ConversationStore(path)
    assert thread(store, 1) == ["a", "b", "c"] and store.system_prompt(1) == ""
    store.add_message(1, "assistant", "d")
    assert thread(store, 1) == ["a", "b", "c", "d"]


def test_a_disk_that_refuses_writes_moves_the_store_to_memory_once_and_loses_nothing(tmp_path: Path) -> None:
    """The folder turns read-only mid-session (simulated with SQLite's query_only, which raises the same
    'attempt to write a readonly database' a read-only file does, also for root)."""
    warnings: list[str] = []
    store = ConversationStore(tmp_path / "c.sqlite3", on_degraded=warnings.append)
    chat = store.create("Before")
    store.add_message(chat, "user", "saved on disk")
    store.db.execute("PRAGMA query_only = ON")
    store.add_message(chat, "user", "kept in memory")
    new_chat = store.create("After")
    assert thread(store, chat) == ["saved on disk", "kept in memory"] and store.title(new_chat) == "After"
    assert len(warnings) == 1 and "cannot be saved" in warnings[0] and "make" in warnings[0] and "writable" in warnings[0]
    assert "Traceback" not in warnings[0] and "OperationalError" not in warnings[0]
    store.close()
    assert thread(ConversationStore(tmp_path / "c.sqlite3"), chat) == ["saved on disk"]


def test_a_folder_that_cannot_hold_the_database_starts_in_memory(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the data folder should be")
    store = ConversationStore(blocked / "c.sqlite3")
    assert store.degraded and "kept in memory" in store.degraded
    chat = store.create("Works anyway")
    store.add_message(chat, "user", "hello")
    assert thread(store, chat) == ["hello"]
