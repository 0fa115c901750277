"""Saved conversations: SQLite in the app-data folder, a tree of messages per conversation.

Editing an earlier message or regenerating an answer adds a sibling instead of overwriting, so the old branch
stays one click away. Each message records which of its children continues the conversation shown (`selected`),
and the thread is the path from the first message through the selected children.

The store lives in the engine, not the app, because both read it: the window saves and shows the chats, and
lookup drafting in the window, `specchat-cli generate` and `serve` drafts from them (`saved_chats`). It is plain
SQLite: nothing here touches Qt or MLX.

Every write commits at once: a commit reaches the operating system immediately (a crash of the app or `kill -9`
loses nothing written). The window saves an answer after every batch of tokens, so at most one round is lost.
How the file is opened, so that no fault of the disk can crash the app, is `database_file`'s. When the disk
refuses a write (a read-only folder, a full disk), the store moves to an in-memory copy of everything so far and
says so once: the session goes on, nothing typed is lost, and the message tells how to make saving work again.
A folder already read-only at launch shows its chats all the same, read from a copy, and says so from the start.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .answer_ends import can_go_on
from .attachments import Attached, attached_from_record, with_attachments
from .chat_images import ChatImage, message_content
from .conversation_schema import prepare_tables
from .conversation_title import follow_first_question
from .database_file import degraded_message, open_for_reading, open_for_writing, read_into_memory, write_refusal
from .events import trace_line
from .markdown_export import conversation_markdown
from .models.app_paths import data_dir

_COLUMNS = "id, role, content, runs, summary, finish, parent_id, trace, reasoning, reasoning_s, attachments, tool_calls"
AFTER_LAST = -1  # add_message's default parent: the last message of the thread shown


@dataclass
class StoredMessage:
    """One message as saved, in the thread shown.

    Attributes:
        role: "user" or "assistant".
        content: the text (of an answer: the answer alone, without a thinking model's reasoning).
        runs: for answers, each token's [text, origin, round] (to show the coloured view again), with its part
            after them when it is not the answer's ([text, origin, round, "reasoning" or "marker"]).
        summary: the answer's stats line.
        finish: how generation ended ("stop", "length", "cancelled", ...; "" while streaming or for users).
        parent_id: the message it answers or follows (None for the first).
        trace: for answers, each round's record (RoundEvent.trace_record): the speculation, round by round.
        branch, branches: which of its siblings it is (from 1) and how many there are.
        reasoning: a thinking model's reasoning before the answer ("" for none).
        reasoning_s: how long it thought, in seconds.
        attachments: for questions, the files (their text, as sent) and images (their bytes) attached to it.
        tool_calls: for answers that called MCP tools, their calls and results (engine/mcp_tools/saved_calls.py's
            record; empty for none).
    """

    id: int
    role: str
    content: str
    runs: list[list] = field(default_factory=list)
    summary: str = ""
    finish: str = ""
    parent_id: int | None = None
    trace: list[dict] = field(default_factory=list)
    branch: int = 1
    branches: int = 1
    reasoning: str = ""
    reasoning_s: float = 0.0
    attachments: list[Attached] = field(default_factory=list)
    tool_calls: dict = field(default_factory=dict)

    @property
    def prompt_text(self) -> str:
        """The message's text as the model reads it: a question's attached files before its text."""
        return with_attachments(self.content, self.attachments)

    @property
    def images(self) -> list[ChatImage]:
        return [a for a in self.attachments if isinstance(a, ChatImage)]

    @property
    def prompt_content(self) -> str | list[dict[str, Any]]:
        """The message as the engine reads it: its text, its images (if any) as parts before it."""
        return message_content(self.prompt_text, self.images)

    @property
    def continuable(self) -> bool:
        """Whether it is an answer that can go on where it ended (`can_go_on`)."""
        return can_go_on(self.role, self.content, self.finish)

    def model_messages(self) -> list[dict[str, Any]]:
        """The message in a conversation for the model: an answer's reasoning as `reasoning_content` (which the
        engine passes on only to a template that renders it), and the tool calls an answer made, with their results."""
        message = {"role": self.role, "content": self.prompt_content, **({"reasoning_content": self.reasoning} if self.reasoning else {})}
        if not self.tool_calls:
            return [message]
        from .mcp_tools.saved_calls import AnswerCalls  # the MCP SDK is imported only for a chat that used tools

        return AnswerCalls.from_record(self.tool_calls).messages(message)


@dataclass
class ConversationInfo:
    id: int
    title: str
    updated: float


class ConversationStore:
    """The conversations database.

    Args:
        path: the SQLite file (created if missing).
        on_degraded: called once with a message if the store has to go on in memory.
    """

    def __init__(self, path: Path, on_degraded: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.on_degraded = on_degraded
        self.degraded: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            refusal = write_refusal(path)
            if refusal is not None:
                raise refusal
            self.db = open_for_writing(path)
            prepare_tables(self.db)
        except (sqlite3.Error, OSError) as error:
            self.db = read_into_memory(path)
            prepare_tables(self.db)
            self.degraded = degraded_message(self.path, error)

    def _write(self, statement: str, args: tuple = (), touching: int | None = None) -> sqlite3.Cursor:
        """Run and commit a write, marking conversation `touching` updated in the same commit (one sync, not two);
        if the disk refuses, continue in an in-memory copy of the database."""
        try:
            return self._commit(statement, args, touching)
        except sqlite3.OperationalError as error:
            if self.degraded is not None:
                raise
            self._move_to_memory(error)
            return self._commit(statement, args, touching)

    def _insert(self, statement: str, args: tuple, touching: int | None = None) -> int:
        """`_write` an INSERT; the id of the row it added."""
        row_id = self._write(statement, args, touching).lastrowid
        assert row_id is not None  # sqlite3 sets it for every INSERT that runs (one that fails raised in _write)
        return row_id

    def _commit(self, statement: str, args: tuple, touching: int | None) -> sqlite3.Cursor:
        cursor = self.db.execute(statement, args)
        if touching is not None:
            self.db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (time.time(), touching))
        self.db.commit()
        return cursor

    def _move_to_memory(self, error: sqlite3.OperationalError) -> None:
        self.db.rollback()
        memory = sqlite3.connect(":memory:")
        self.db.backup(memory)
        self.db.close()
        self.db = memory
        self.db.execute("PRAGMA foreign_keys = ON")
        self.degraded = degraded_message(self.path, error)
        if self.on_degraded:
            self.on_degraded(self.degraded)

    def close(self) -> None:
        self.db.close()

    # --- conversations ---------------------------------------------------------------------------------------

    def create(self, title: str = "New chat") -> int:
        now = time.time()
        return self._insert("INSERT INTO conversations (title, created, updated) VALUES (?, ?, ?)", (title, now, now))

    def conversations(self, matching: str = "") -> list[ConversationInfo]:
        """Conversations, most recently updated first; with `matching`, those whose title or messages contain it."""
        if not matching.strip():
            rows = self.db.execute("SELECT id, title, updated FROM conversations ORDER BY updated DESC, id DESC")
            return [ConversationInfo(*row) for row in rows]
        pattern = f"%{_escape_like(matching.strip())}%"
        rows = self.db.execute(
            "SELECT id, title, updated FROM conversations c WHERE title LIKE ? ESCAPE '\\' OR EXISTS "
            "(SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.content LIKE ? ESCAPE '\\') "
            "ORDER BY updated DESC, id DESC",
            (pattern, pattern),
        )
        return [ConversationInfo(*row) for row in rows]

    def title(self, conversation_id: int) -> str:
        row = self.db.execute("SELECT title FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        return row[0] if row else ""

    def rename(self, conversation_id: int, title: str) -> None:
        self._write("UPDATE conversations SET title = ? WHERE id = ?", (title.strip() or "Untitled", conversation_id))

    def system_prompt(self, conversation_id: int) -> str:
        row = self.db.execute("SELECT system_prompt FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        return row[0] if row else ""

    def set_system_prompt(self, conversation_id: int, text: str) -> None:
        self._write("UPDATE conversations SET system_prompt = ? WHERE id = ?", (text, conversation_id))

    def think(self, conversation_id: int) -> bool | None:
        """The chat's own Think switch; None: it follows the default in Settings."""
        row = self.db.execute("SELECT think FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        return None if row is None or row[0] is None else bool(row[0])

    def set_think(self, conversation_id: int, on: bool) -> None:
        self._write("UPDATE conversations SET think = ? WHERE id = ?", (int(on), conversation_id))

    def delete(self, conversation_id: int) -> None:
        self._write("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    def exists(self, conversation_id: int) -> bool:
        return self.db.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone() is not None

    # --- messages ----------------------------------------------------------------------------------------------

    def messages(self, conversation_id: int) -> list[StoredMessage]:
        """The thread shown: from the first message through each message's selected child."""
        return _shown_thread(self.db, conversation_id)

    def add_message(self, conversation_id: int, role: str, content: str, parent_id: int | None = AFTER_LAST,
                    attachments: tuple[Attached, ...] = ()) -> int:
        """Add a message (with its attached files) under `parent_id` (None: a first message; by default after the
        thread's last) and show it.

        A message added where one already is becomes its sibling: the new branch is shown, the old one kept."""
        if parent_id == AFTER_LAST:
            thread = self.messages(conversation_id)
            parent_id = thread[-1].id if thread else None
        self._deselect_children(conversation_id, parent_id)
        (position,) = self.db.execute(
            "SELECT COALESCE(MAX(position), -1) + 1 FROM messages WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()
        message_id = self._insert(
            "INSERT INTO messages (conversation_id, position, role, content, parent_id, selected, attachments) "
            "VALUES (?, ?, ?, ?, ?, 1, ?)",
            (conversation_id, position, role, content, parent_id,
             json.dumps([a.record() for a in attachments], ensure_ascii=False)),
            touching=conversation_id,
        )
        if parent_id is None:  # a new first question (an edit of it): the title may follow
            follow_first_question(self, conversation_id)
        return message_id

    def _deselect_children(self, conversation_id: int, parent_id: int | None) -> None:
        self._write("UPDATE messages SET selected = 0 WHERE conversation_id = ? AND parent_id IS ?", (conversation_id, parent_id))

    def parent_of(self, message_id: int) -> int | None:
        row = self.db.execute("SELECT parent_id FROM messages WHERE id = ?", (message_id,)).fetchone()
        return row[0] if row else None

    def conversation_of(self, message_id: int) -> int | None:
        row = self.db.execute("SELECT conversation_id FROM messages WHERE id = ?", (message_id,)).fetchone()
        return row[0] if row else None

    def select_branch(self, message_id: int, step: int) -> None:
        """Show the sibling `step` places after (or before) this message instead of it."""
        row = self.db.execute("SELECT conversation_id, parent_id FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            return
        conversation_id, parent_id = row
        siblings = [r[0] for r in self.db.execute(
            "SELECT id FROM messages WHERE conversation_id = ? AND parent_id IS ? ORDER BY id", (conversation_id, parent_id)
        )]
        chosen = siblings[(siblings.index(message_id) + step) % len(siblings)]
        self._deselect_children(conversation_id, parent_id)
        self._write("UPDATE messages SET selected = 1 WHERE id = ?", (chosen,))
        if parent_id is None:
            follow_first_question(self, conversation_id)

    def update_message(
        self, message_id: int, content: str, runs: list[list] | None = None, summary: str = "", finish: str = "",
        trace: list[dict] | None = None, reasoning: str = "", reasoning_s: float = 0.0,
    ) -> None:
        """Save an answer's text (and reasoning) so far; its trace only when given (None keeps the saved one)."""
        trace_json = None if trace is None else json.dumps(trace, ensure_ascii=False)
        row = self.db.execute("SELECT conversation_id FROM messages WHERE id = ?", (message_id,)).fetchone()
        self._write(
            "UPDATE messages SET content = ?, runs = ?, summary = ?, finish = ?, trace = COALESCE(?, trace), "
            "reasoning = ?, reasoning_s = ? WHERE id = ?",
            (content, json.dumps(runs or [], ensure_ascii=False), summary, finish, trace_json, reasoning, reasoning_s,
             message_id),
            touching=row[0] if row else None,
        )

    def set_attachments(self, message_id: int, attachments: list[Attached]) -> None:
        """Save a question's files and images again (its images' token counts, once a vision target read them)."""
        self._write("UPDATE messages SET attachments = ? WHERE id = ?",
                    (json.dumps([a.record() for a in attachments], ensure_ascii=False), message_id))

    def set_tool_calls(self, message_id: int, record: dict) -> None:
        """Save an answer's tool calls as they stand (saved_calls.AnswerCalls.record)."""
        self._write("UPDATE messages SET tool_calls = ? WHERE id = ?", (json.dumps(record, ensure_ascii=False), message_id),
                    touching=self.conversation_of(message_id))

    def delete_message(self, message_id: int) -> None:
        """Delete a message and everything after it on its branch; a sibling, if any, is shown instead."""
        row = self.db.execute("SELECT conversation_id, parent_id, selected, content FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            return
        conversation_id, parent_id, selected, content = row
        self._write("DELETE FROM messages WHERE id = ?", (message_id,))
        if selected:
            self._write("UPDATE messages SET selected = 1 WHERE id = (SELECT MAX(id) FROM messages WHERE conversation_id = ? "
                        "AND parent_id IS ?)", (conversation_id, parent_id))
        if parent_id is None:  # a first question: the title may follow the one shown now
            follow_first_question(self, conversation_id, deleted=content)

    def take_back_question(self, conversation_id: int) -> str | None:
        """Take a question the model could not read (too long) out of the conversation, and the conversation if it is
        left empty, so that the chat goes on; its text, for the user to shorten (None: no question ends it)."""
        thread = self.messages(conversation_id)
        if not thread or thread[-1].role != "user":
            return None
        self.delete_message(thread[-1].id)
        if len(thread) == 1:
            self.delete(conversation_id)
        return thread[-1].content

    def check_integrity(self) -> bool:
        """SQLite's own check of the file, and no message pointing at a message that is gone."""
        ok = self.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        orphans = self.db.execute(
            "SELECT COUNT(*) FROM messages m WHERE m.parent_id IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM messages p WHERE p.id = m.parent_id)"
        ).fetchone()[0]
        return ok and orphans == 0

    def export_trace(self, message_id: int) -> str:
        """An answer's speculation trace as JSON Lines, one round per line (what `specchat-cli --trace` writes)."""
        row = self.db.execute("SELECT trace FROM messages WHERE id = ?", (message_id,)).fetchone()
        return "".join(trace_line(record) for record in json.loads(row[0])) if row else ""

    def export_markdown(self, conversation_id: int) -> str:
        """The conversation shown as Markdown (engine/markdown_export.py) with its own system prompt, a question's files
        as the model read them: fenced, under their names."""
        return conversation_markdown(self.title(conversation_id), self.messages(conversation_id), self.system_prompt(conversation_id))


def database_path() -> Path:
    """Where the conversations are saved: the app-data folder's one database."""
    return data_dir() / "conversations.sqlite3"


def _shown_thread(db: sqlite3.Connection, conversation_id: int) -> list[StoredMessage]:
    """A conversation's shown thread: from the first message through each message's selected child."""
    rows = db.execute(f"SELECT {_COLUMNS}, selected FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,))
    children: dict[int | None, list[tuple]] = {}
    for row in rows:
        children.setdefault(row[6], []).append(row)
    thread, parent = [], None
    while children.get(parent):
        siblings = children[parent]
        index = next((i for i, row in enumerate(siblings) if row[12]), len(siblings) - 1)
        row = siblings[index]
        thread.append(StoredMessage(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5], row[6],
                                    json.loads(row[7]), index + 1, len(siblings), row[8], row[9],
                                    [attached_from_record(a) for a in json.loads(row[10])], json.loads(row[11])))
        parent = row[0]
    return thread


def saved_chats(path: Path | None = None, limit: int = 1000) -> Iterator[list[dict[str, str]]]:
    """The shown thread of each saved conversation (in `path`, by default the app's database), oldest first (the
    `limit` most recent), with its system prompt, for the engine's history index. Opens its own read-only
    connection: it runs on another thread."""
    path = path or database_path()
    if not path.is_file():
        return
    try:
        db = open_for_reading(path)
    except sqlite3.Error:
        return
    try:
        rows = db.execute("SELECT id, system_prompt FROM conversations ORDER BY updated DESC, id DESC LIMIT ?", (limit,))
        for conversation_id, system_prompt in reversed(rows.fetchall()):
            messages = [{"role": m.role, "content": m.prompt_text} for m in _shown_thread(db, conversation_id) if m.content]
            if system_prompt:
                messages.insert(0, {"role": "system", "content": system_prompt})
            if messages:
                yield messages
    except sqlite3.Error:
        return
    finally:
        db.close()


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
