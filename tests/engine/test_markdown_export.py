"""A conversation exported as Markdown: an answer cut inside a code block gets its fence closed; a question reads as the
chat shows it."""

from __future__ import annotations

import pytest

from engine.conversations import ConversationStore
from engine.markdown_export import closed_fences, verbatim


@pytest.mark.parametrize("text, closed", [
    ("Here:\n```python\nprint(1)", "Here:\n```python\nprint(1)\n```"),
    ("~~~~\na\n~~~", "~~~~\na\n~~~\n~~~~"),  # a shorter fence does not close a longer one
    ("```\na\n```\nDone.", "```\na\n```\nDone."),
    ("```js\nlet s = '```x';\n", "```js\nlet s = '```x';\n\n```"),
    ("No code.", "No code."),
])
def test_a_fence_left_open_is_closed(text: str, closed: str) -> None:
    assert closed_fences(text) == closed


def test_an_answer_cut_inside_a_code_block_exports_with_its_fence_closed(tmp_path) -> None:
    """The open fence swallowed every message after it into the code."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("Code")
    store.add_message(chat, "user", "Show me")
    answer = store.add_message(chat, "assistant", "")
    store.update_message(answer, "```python\nfor i in range(", [], "(interrupted)", "cancelled")
    store.add_message(chat, "user", "Go on")
    exported = store.export_markdown(chat)
    assert "```python\nfor i in range(\n```\n\n*(interrupted)*\n\n**You:**\n\nGo on\n" in exported


def test_a_chat_s_own_system_prompt_is_exported_before_its_messages(tmp_path) -> None:
    """A walker's export of a chat with "Answer like a pirate." left out what the answers were asked under."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    pirate, plain = store.create("Pirate"), store.create("Plain")
    for chat in (pirate, plain):
        store.add_message(chat, "user", "Hello")
    store.set_system_prompt(pirate, "Answer like a pirate.\nBe brief.")
    assert store.export_markdown(pirate).startswith("# Pirate\n\n**System prompt:**\n\nAnswer like a pirate.  \nBe brief.\n\n**You:**")
    assert "System prompt" not in store.export_markdown(plain)


def test_an_answer_that_called_tools_exports_its_calls_as_the_chat_shows_them(tmp_path) -> None:
    """The export held the call markup the model wrote (`<tool_call>{...}</tool_call>`), not the calls."""
    from engine.mcp_tools.saved_calls import AnswerCalls, CallRecord

    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("Time")
    store.add_message(chat, "user", "What time is it?")
    answer = store.add_message(chat, "assistant", "")
    raw = 'I will check.\n<tool_call>\n{"name": "now", "arguments": {"zone": "UTC"}}\n</tool_call>'
    store.update_message(answer, raw, [], "12 tokens", "stop")
    record = CallRecord("call_1", "now", '{"zone": "UTC"}', "time", "done", "2026-11-27T02:00:00Z")
    store.set_tool_calls(answer, AnswerCalls("I will check.", [record]).record())
    exported = store.export_markdown(chat)
    assert "<tool_call>" not in exported and '"arguments"' not in exported
    assert ('**Assistant:**\n\nI will check.\n\n**Tool call:** `now(zone="UTC")` · time\n\n'
            "<details><summary>Result (1 line)</summary>\n\n```text\n2026-11-27T02:00:00Z\n```\n\n</details>\n\n*12 tokens*") in exported


@pytest.mark.parametrize("question, exported", [
    ("Fix this:\ndef f(x):\n    return x", "```text\nFix this:\ndef f(x):\n    return x\n```"),  # pasted code kept indented
    ("Why?\nAnd how?", "Why?  \nAnd how?"),  # its lines as typed, not joined into one
    ("Run:\n```sh\nls\n```", "````text\nRun:\n```sh\nls\n```\n````"),  # a fence of its own shown as typed
])
def test_a_question_is_exported_as_the_chat_shows_it(question: str, exported: str) -> None:
    """The chat shows a question as plain text; Markdown joined its lines and lost a pasted function's indentation."""
    assert verbatim(question) == exported


def test_a_pasted_function_keeps_its_indentation_in_the_export(tmp_path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("Fix")
    store.add_message(chat, "user", "Fix this:\ndef f(x):\n    return x")
    assert "**You:**\n\n```text\nFix this:\ndef f(x):\n    return x\n```\n" in store.export_markdown(chat)
