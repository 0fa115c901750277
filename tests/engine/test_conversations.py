"""The conversations store: branches kept when editing or regenerating, search, per-chat system prompts, old
databases migrated, and a disk that refuses writes, from the start or mid-session, never losing what was typed
nor crashing the app."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from engine.attachments import Attachment, with_attachments
from engine.chat_images import ChatImage
from engine.conversation_title import automatic_title
from engine.conversations import ConversationStore, saved_chats
from tests.data_folders import crashed_wal_database, read_only, saved_chats_at, snapshot, turned_read_only_mid_run
from tests.engine.test_conversation_schema import BEFORE_BRANCHES


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


def test_a_question_the_model_cannot_read_is_taken_back_with_its_chat_if_alone(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    alone, going_on = store.create("Alone"), store.create("Going on")
    store.add_message(alone, "user", "Too long")
    for role, text in (("user", "Hi"), ("assistant", "Hello"), ("user", "Too long too")):
        store.add_message(going_on, role, text)
    assert store.take_back_question(alone) == "Too long" and not store.exists(alone)
    assert store.take_back_question(going_on) == "Too long too" and thread(store, going_on) == ["Hi", "Hello"]
    assert store.take_back_question(going_on) is None and thread(store, going_on) == ["Hi", "Hello"]  # no question last


def test_a_saved_answer_says_whether_it_can_go_on(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("Chat")
    store.add_message(chat, "user", "Hi")
    answer = store.add_message(chat, "assistant", "")
    for finish, can in (("length", True), ("stop", False)):
        store.update_message(answer, "Hello, th", finish=finish)
        assert store.messages(chat)[-1].continuable is can
    assert not store.messages(chat)[0].continuable


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
        BEFORE_BRANCHES + "INSERT INTO conversations VALUES (1, 'Old', 0, 0);"
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


def test_a_read_only_folder_at_launch_shows_every_saved_chat_and_keeps_new_ones_in_memory(tmp_path: Path) -> None:
    """The store opened an empty database in memory: the sidebar was empty although the file held 5 chats, and
    the message said only "unable to open database file". Read-only: see tests/data_folders.py."""
    folder = tmp_path / "data"
    chats = saved_chats_at(folder / "c.sqlite3")
    with read_only(folder) as files:
        before = snapshot(files)
        store = ConversationStore(folder / "c.sqlite3")
        assert sorted(c.id for c in store.conversations()) == chats and thread(store, chats[2]) == [f"question {chats[2]}"]
        assert store.degraded and f"{folder} is read-only" in store.degraded and f"make {folder} writable" in store.degraded
        assert "kept in memory" in store.degraded and "unable to open" not in store.degraded
        new = store.create("New")
        store.add_message(new, "user", "kept in memory")
        assert thread(store, new) == ["kept in memory"] and len(store.conversations()) == 6
        store.close()
        assert snapshot(files) == before and sorted(folder.iterdir()) == files  # nothing written, nothing left
    assert sorted(c.id for c in ConversationStore(folder / "c.sqlite3").conversations()) == chats


def test_a_read_only_folder_a_crash_left_a_wal_in_is_read_whole_without_touching_it(tmp_path: Path) -> None:
    """Its chats were shown but no notice said they could not be saved, and lookup drafting found none of
    them. The `-shm` is immutable too: SQLite must not map it."""
    folder = tmp_path / "data"
    crashed_wal_database(folder / "c.sqlite3")
    with read_only(folder) as files:
        before = snapshot(files)
        store = ConversationStore(folder / "c.sqlite3")
        assert [c.title for c in store.conversations()] == [f"Chat {i}" for i in (4, 3, 2, 1, 0)]
        assert store.degraded and f"{folder} is read-only" in store.degraded
        store.add_message(store.create("New"), "user", "kept in memory")
        store.close()
        assert [chat[0]["content"] for chat in saved_chats(folder / "c.sqlite3")] == [f"question {i}" for i in range(1, 6)]
        assert snapshot(files) == before and sorted(folder.iterdir()) == files


def test_a_database_that_turns_read_only_mid_session_is_an_error_not_a_crash(tmp_path: Path) -> None:
    """With the WAL journal, its `-shm` is mapped into memory; once immutable, the next save killed the app with
    `Fatal Python error: Bus error` (SIGBUS). A child process saves before and after the folder turns read-only.

    The child imports the store under a bare `engine` package: the package's own __init__ imports MLX and mlx-lm
    for its public API (most of this test's time, under load 10 s), and the store uses neither."""
    folder = tmp_path / "data"
    saved_chats_at(folder / "c.sqlite3", count=1)
    code = (
        "import sys, types; from pathlib import Path\n"
        "sys.modules['engine'] = types.ModuleType('engine'); sys.modules['engine'].__path__ = ['engine']\n"
        "from engine.conversations import ConversationStore\n"
        f"store = ConversationStore(Path({str(folder / 'c.sqlite3')!r}))\n"
        "chat = store.create('Mid-session'); store.add_message(chat, 'user', 'saved')\n"
        "print('ready', flush=True); sys.stdin.readline()\n"
        "store.add_message(chat, 'user', 'kept in memory'); store.create('Another')\n"
        "print([m.content for m in store.messages(chat)], len(store.conversations())); print(store.degraded)\n"
    )
    done = turned_read_only_mid_run(code, folder)
    assert done.returncode == 0, done.stderr
    thread_line, message = done.stdout.splitlines()
    assert thread_line == "['saved', 'kept in memory'] 3"
    assert f"{folder} is read-only" in message and "kept in memory" in message
    assert thread(ConversationStore(folder / "c.sqlite3"), 2) == ["saved"]


def test_a_database_from_before_is_journaled_without_memory_mapped_files(tmp_path: Path) -> None:
    """The WAL journal's `-shm` is what crashed the app (above): an old database leaves it on first opening."""
    folder = tmp_path / "data"
    crashed_wal_database(folder / "c.sqlite3")
    store = ConversationStore(folder / "c.sqlite3")
    store.add_message(store.create("New"), "user", "saved")
    assert store.db.execute("PRAGMA journal_mode").fetchone() == ("truncate",) and len(store.conversations()) == 6
    assert not (folder / "c.sqlite3-shm").exists() and not (folder / "c.sqlite3-wal").exists()


def test_an_answer_keeps_its_reasoning_apart_with_how_long_it_thought(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("Chat")
    store.add_message(chat, "user", "Capital of France?")
    answer = store.add_message(chat, "assistant", "")
    runs = [["", "target", 0, "marker"], ["Easy", "target", 0, "reasoning"], ["Paris.", "accepted", 1]]
    store.update_message(answer, "Paris.", runs, "1 tok/s", "stop", reasoning="Easy", reasoning_s=12.5)
    store.close()
    saved = ConversationStore(tmp_path / "c.sqlite3").messages(chat)[1]
    assert (saved.content, saved.reasoning, saved.reasoning_s, saved.runs) == ("Paris.", "Easy", 12.5, runs)


def test_each_chat_keeps_its_own_think_switch_or_follows_the_default(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    a, b = store.create("A"), store.create("B")
    store.set_think(a, False)
    store.close()
    again = ConversationStore(tmp_path / "c.sqlite3")
    assert again.think(a) is False and again.think(b) is None


def test_a_database_from_before_reasoning_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    ConversationStore(path).close()
    db = sqlite3.connect(str(path))
    for table, column in (("messages", "reasoning"), ("messages", "reasoning_s"), ("conversations", "think")):
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.execute("INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Old', 0, 0)")
    db.execute("INSERT INTO messages (id, conversation_id, position, role, content, parent_id) VALUES "
               "(1, 1, 0, 'user', 'a', NULL), (2, 1, 1, 'assistant', 'b', 1)")
    db.commit()
    db.close()
    store = ConversationStore(path)
    assert [(m.content, m.reasoning, m.reasoning_s) for m in store.messages(1)] == [("a", "", 0.0), ("b", "", 0.0)]
    assert store.think(1) is None
    store.set_think(1, True)
    assert store.think(1) is True


def test_a_question_keeps_its_attached_files_text_through_reopening_and_export(tmp_path: Path) -> None:
    """The files' text is saved, not their paths; the history index and the Markdown export read them as the
    model did: fenced under their names, before the question."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("Edit")
    files = (Attachment("app.py", "def f():\n    return 1\n", 24, tokens=12), Attachment("notes.md", "# Notes", 7, tokens=5))
    store.add_message(chat, "user", "Make f return 2.", attachments=files)
    store.add_message(chat, "assistant", "def f():\n    return 2")
    store.close()
    reopened = ConversationStore(tmp_path / "c.sqlite3")
    question, answer = reopened.messages(chat)
    assert (question.content, question.attachments, answer.attachments) == ("Make f return 2.", list(files), [])
    assert reopened.conversation_of(answer.id) == chat and reopened.conversation_of(answer.id + 1) is None
    assert question.prompt_text == with_attachments("Make f return 2.", files)
    markdown = reopened.export_markdown(chat)
    assert "**You:**\n\napp.py\n```py\ndef f():\n    return 1\n```\n\nnotes.md\n```md\n# Notes\n```\n\nMake f return 2." in markdown
    assert markdown.index("Make f return 2.") < markdown.index("**Assistant:**\n\ndef f():\n    return 2")
    assert list(saved_chats(tmp_path / "c.sqlite3"))[0][0]["content"] == question.prompt_text


def test_a_database_from_before_attachments_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    ConversationStore(path).close()
    db = sqlite3.connect(str(path))
    db.execute("ALTER TABLE messages DROP COLUMN attachments")
    db.execute("INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Old', 0, 0)")
    db.execute("INSERT INTO messages (id, conversation_id, position, role, content, parent_id) VALUES (1, 1, 0, 'user', 'a', NULL)")
    db.commit()
    db.close()
    store = ConversationStore(path)
    assert [(m.content, m.attachments) for m in store.messages(1)] == [("a", [])]
    store.add_message(1, "user", "b", attachments=(Attachment("x.txt", "x", 1),))
    assert store.messages(1)[1].attachments == [Attachment("x.txt", "x", 1)]


def test_a_long_question_s_title_ends_after_a_whole_word_with_an_ellipsis() -> None:
    title = automatic_title("The quick brown fox jumps over the lazy dog, and then it jumps over the lazy cat again.")
    assert title == "The quick brown fox jumps over the lazy dog, and then it…" and len(title) <= 60
    assert automatic_title("  Short\n question ") == "Short question"
    assert automatic_title("x" * 80) == "x" * 59 + "…"  # one word longer than a title: cut within it


def test_a_title_made_before_the_whole_word_cut_still_follows_the_first_question(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    question = "The quick brown fox jumps over the lazy dog, and then it jumps over the lazy cat again."
    chat = store.create(" ".join(question.split())[:60].rstrip())  # as versions before this one titled it
    store.add_message(chat, "user", question)
    store.add_message(chat, "user", "What is MLX?", parent_id=None)  # the first question edited
    assert store.title(chat) == "What is MLX?"


def test_an_automatic_title_follows_the_first_question_shown_and_a_rename_stays(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create(automatic_title("What is MLX?"))
    question = store.add_message(chat, "user", "What is MLX?")
    store.add_message(chat, "assistant", "An array framework.")
    edited = store.add_message(chat, "user", "What is Metal? " * 10, parent_id=None)
    assert store.title(chat) == automatic_title("What is Metal? " * 10)
    store.select_branch(edited, -1)
    assert store.title(chat) == "What is MLX?"
    store.rename(chat, "Apple frameworks")
    store.select_branch(question, 1)
    store.add_message(chat, "user", "What is Core ML?", parent_id=None)
    assert store.title(chat) == "Apple frameworks"


def test_deleting_the_first_question_shown_retitles_the_chat_after_the_one_shown_instead(tmp_path: Path) -> None:
    """Edit, then delete the edited branch: the chat showed its first question again under the deleted one's title
    (the deleted question's title no longer counted as automatic). A rename still stays."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create(automatic_title("What is MLX?"))
    store.add_message(chat, "user", "What is MLX?")
    edited = store.add_message(chat, "user", "What is Metal?", parent_id=None)
    store.delete_message(edited)
    assert [m.content for m in store.messages(chat)] == ["What is MLX?"] and store.title(chat) == "What is MLX?"
    edited = store.add_message(chat, "user", "What is Metal?", parent_id=None)
    store.rename(chat, "Apple frameworks")
    store.delete_message(edited)
    assert store.title(chat) == "Apple frameworks"


def test_a_question_keeps_its_images_bytes_beside_its_files_through_reopening(tmp_path: Path) -> None:
    """Images are saved inside the chat (never a path), in order among the files; a question's content for the
    engine holds them as parts before its text; a token count saved later reopens with it; the export inlines them."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("Look")
    image = ChatImage("cat.png", b"\x89PNG pixels", 4, 3, 120)
    attached = (Attachment("notes.md", "# Notes", 7, tokens=5), image)
    question_id = store.add_message(chat, "user", "What is this?", attachments=attached)
    store.set_attachments(question_id, [attached[0], replace(image, tokens=12)])
    store.close()
    question = ConversationStore(tmp_path / "c.sqlite3").messages(chat)[0]
    assert question.attachments == [attached[0], replace(image, tokens=12)] and question.images[0].data == image.data
    assert question.prompt_text == with_attachments("What is this?", attached[:1])
    assert question.prompt_content == [{"type": "image", "image": image.data},
                                       {"type": "text", "text": question.prompt_text}]
    markdown = ConversationStore(tmp_path / "c.sqlite3").export_markdown(chat)
    assert "**You:**\n\n![cat.png](data:image/png;base64,iVBORyBwaXhlbHM=)\n\nnotes.md" in markdown
