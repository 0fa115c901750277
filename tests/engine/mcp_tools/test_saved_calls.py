"""An answer's calls as saved with the chat, and as the model reads them again: results, refusals, a quit mid-call."""

from engine.conversations import ConversationStore
from engine.mcp_tools.saved_calls import AnswerCalls, CallRecord, call_line


def _calls(*records: CallRecord) -> AnswerCalls:
    return AnswerCalls("Let me check.", list(records))


def test_the_answer_reads_as_its_text_and_calls_then_a_tool_message_per_call():
    calls = _calls(CallRecord("c1", "add", '{"a": 1}', "demo", "done", "2"),
                   CallRecord("c2", "rm", "{}", "demo", "denied", "The user denied the call to rm"))
    answer, *results = calls.messages({"role": "assistant", "content": "<tool_call>raw</tool_call>", "reasoning_content": "hm"})
    assert answer["content"] == "Let me check." and answer["reasoning_content"] == "hm"
    assert [c["function"] for c in answer["tool_calls"]] == [{"name": "add", "arguments": {"a": 1}}, {"name": "rm", "arguments": {}}]
    assert [(r["tool_call_id"], r["content"]) for r in results] == [("c1", "2"), ("c2", "The user denied the call to rm")]


def test_arguments_that_are_not_an_object_are_kept_under_value():
    [answer, _] = _calls(CallRecord("c1", "add", "{broken", "demo", "failed", "not JSON")).messages({"role": "assistant"})
    assert answer["tool_calls"][0]["function"]["arguments"] == {"value": "{broken"}


def test_a_call_saved_unfinished_reads_as_interrupted_to_the_model():
    [_, running, asking] = _calls(CallRecord("c1", "hang", "{}", "demo", "running"),
                                  CallRecord("c2", "add", "{}", "demo", "asking")).messages({"role": "assistant"})
    assert running["content"] == "Interrupted: SpecChat closed before hang returned."
    assert asking["content"] == "Not run: SpecChat closed before add was allowed or denied."
    assert not _calls(CallRecord("c1", "hang", "{}")).finished


def test_the_record_is_saved_with_the_answer_and_read_back_as_the_model_reads_it(tmp_path):
    store = ConversationStore(tmp_path / "chats.sqlite3")
    chat = store.create()
    store.add_message(chat, "user", "2+40?")
    answer = store.add_message(chat, "assistant", "<tool_call>…</tool_call>")
    calls = _calls(CallRecord("c1", "add", '{"a": 2, "b": 40}', "demo", "done", "42"))
    store.set_tool_calls(answer, calls.record())
    store.close()
    saved = ConversationStore(tmp_path / "chats.sqlite3").messages(chat)
    assert AnswerCalls.from_record(saved[1].tool_calls) == calls
    assert [m["role"] for message in saved for m in message.model_messages()] == ["user", "assistant", "tool"]


def test_the_call_reads_as_one_line():
    assert call_line("add", '{"a": 2, "b": "x"}') == 'add(a=2, b="x")'
    assert call_line("add", "{broken") == "add({broken)"
    assert call_line("add", "[1]") == "add([1])"


def test_in_markdown_a_result_is_folded_and_a_denial_is_its_line():
    calls = AnswerCalls("Let me add.", [CallRecord("c1", "add", '{"a": 2}', "demo", "done", "42\n```"),
                                        CallRecord("c2", "rm", "{}", "", "denied", "Denied: rm was not run.")])
    assert calls.markdown() == ("Let me add.\n\n**Tool call:** `add(a=2)` · demo\n\n<details><summary>Result (2 lines)</summary>"
                                "\n\n````text\n42\n```\n````\n\n</details>\n\n**Tool call:** `rm()`\n\n*Denied: rm was not run.*")
