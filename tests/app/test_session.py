"""The chat session without any widget: answers saved while they stream, routing between the chat and Compare,
the mode, and settings that survive the loaded pair."""

from __future__ import annotations

import pytest

from app.session import ChatSession
from app.settings import AppSettings
from engine.errors import InvalidParameterError
from engine.events import RoundEvent, TokenEvent
from engine.params import GenerationParams
from tests.app.conftest import start_streaming

GREEDY = GenerationParams(drafter="model", temperature=0.0, top_p=1.0, adaptive=False, num_draft=4, max_tokens=40)


@pytest.fixture
def session(qtbot, isolated_home, tiny_dirs):
    settings = AppSettings()
    settings.save_params(GREEDY)
    settings.save_pinned_drafter(str(tiny_dirs[0]), str(tiny_dirs[1]), GREEDY.drafter)
    session = ChatSession()
    with qtbot.waitSignal(session.pair_loaded, timeout=30_000):
        session.load_pair(str(tiny_dirs[0]), str(tiny_dirs[1]))
    yield session
    session.shutdown()
    assert session.engine_thread.isFinished() and session.download_thread.isFinished()


def answer(qtbot, session: ChatSession, conversation_id: int, text: str):
    with qtbot.waitSignal(session.answer_finished, timeout=60_000) as blocker:
        session.send(conversation_id, text)
    return blocker.args


def test_an_answer_is_saved_with_its_runs_and_stats_line(qtbot, session: ChatSession) -> None:
    busy: list[bool] = []
    session.busy_changed.connect(busy.append)
    conversation = session.new_conversation("Hello there")
    streaming, result, summary = answer(qtbot, session, conversation, "Hello there")
    assert busy == [True, False] and not session.busy
    stored = session.store.messages(conversation)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].content == result.text == streaming.text
    assert [run[1] for run in stored[1].runs] == result.origins
    assert "".join(run[0] for run in stored[1].runs) == result.text
    assert stored[1].summary == summary == result.summary() and stored[1].finish == result.finish_reason
    assert session.history(conversation) == [
        {"role": "user", "content": "Hello there"},
        {"role": "assistant", "content": result.text},
    ]


def test_every_batch_is_in_the_store_before_it_is_shown(qtbot, session: ChatSession) -> None:
    """A crash or kill -9 loses at most the round in flight: what the window shows is already saved."""
    session.apply_settings(GREEDY.replace(max_tokens=200), "")
    stored_vs_streamed: list[tuple[str, str]] = []

    def look(streaming, events) -> None:
        stored_vs_streamed.append((session.store.messages(streaming.conversation_id)[-1].content, streaming.text))

    session.answer_events.connect(look)
    conversation = session.new_conversation("Tell me a story")
    _, result, _ = answer(qtbot, session, conversation, "Tell me a story")
    assert len(stored_vs_streamed) >= 2 and all(stored == streamed for stored, streamed in stored_vs_streamed)
    assert session.store.messages(conversation)[-1].content == result.text


def test_compare_events_never_reach_the_chat_answer(qtbot, session: ChatSession) -> None:
    chat_batches: list[object] = []
    compare_tokens: dict[int, list[int]] = {}
    finished: dict[int, object] = {}
    session.answer_events.connect(lambda streaming, events: chat_batches.append(events))
    session.compare_events.connect(
        lambda request, events: compare_tokens.setdefault(request, []).extend(e.token for e in events if isinstance(e, TokenEvent))
    )
    session.compare_finished.connect(lambda request, result: finished.__setitem__(request, result))
    requests = session.compare(None, [{"role": "user", "content": "Hello"}])
    qtbot.waitUntil(lambda: len(finished) == 2, timeout=60_000)
    assert chat_batches == [] and not session.busy
    assert finished[requests["standard"]].mode == "standard" and finished[requests["model"]].mode == "speculative"
    for side, request in requests.items():
        assert compare_tokens[request] == finished[request].tokens, side


def test_stop_ends_the_answer_and_a_stale_request_is_ignored(qtbot, session: ChatSession) -> None:
    session.apply_settings(GREEDY.replace(max_tokens=900), "")
    conversation = session.new_conversation("A long story")
    start_streaming(qtbot, session, lambda: session.send(conversation, "A long story"))
    first = session.answer
    with qtbot.waitSignal(session.answer_finished, timeout=30_000) as blocker:
        session.stop()
    assert blocker.args[1].finish_reason == "cancelled" and "(stopped)" in blocker.args[2]
    late: list[object] = []
    session.answer_events.connect(lambda streaming, events: late.append(events))
    session._on_events(first.request_id, [RoundEvent(0, 0, 0, 1, "none", 0.0, 0.0)])  # a batch still queued
    assert late == [] and session.store.messages(conversation)[-1].finish == "cancelled"


def test_the_mode_is_remembered_and_the_drafter_is_the_one_chosen_for_the_pair(qtbot, session: ChatSession,
                                                                              tiny_dirs) -> None:
    session.set_mode("standard")
    assert AppSettings().params().mode == "standard" and session.params.mode == "standard"
    session.set_mode("speculative")
    assert session.params.drafter == "model"  # pinned for the fixture's pair
    with qtbot.waitSignal(session.pair_loaded, timeout=30_000):
        session.load_pair(str(tiny_dirs[0]), "")
    assert session.params.drafter == "auto" and session.drafter_note == ""  # never pinned: Automatic, nothing to say
    session.choose_drafter("lookup")
    assert AppSettings().pinned_drafter(str(tiny_dirs[0]), "") == "lookup"
    with qtbot.waitSignal(session.pair_loaded, timeout=30_000):
        session.load_pair(str(tiny_dirs[0]), str(tiny_dirs[1]))
    assert session.params.drafter == "model"


def test_kill_9_mid_answer_loses_nothing_that_was_shown(tiny_dirs, tmp_path) -> None:
    """The answer used to be saved about once a second, so kill -9 lost about a second of text. It is saved
    after every batch now, before the window shows it: whatever was on screen survives."""
    import os
    import signal
    import subprocess
    import sys
    import threading

    from engine.conversations import ConversationStore

    env = {**os.environ, "SPECCHAT_HOME": str(tmp_path), "QT_QPA_PLATFORM": "offscreen"}
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.app.scripts.stream_until_killed", str(tiny_dirs[0]), str(tiny_dirs[1])],
        stdout=subprocess.PIPE, text=True, env=env,
    )
    watchdog = threading.Timer(120, child.kill)  # a child that stops printing fails the test, never hangs it
    watchdog.start()
    shown = []
    for line in child.stdout:
        message_id, length = map(int, line.split())
        shown.append(length)
        if len(shown) >= 15 and length > 0:
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=30)
    watchdog.cancel()
    assert child.returncode == -signal.SIGKILL and len(shown) >= 15
    store = ConversationStore(tmp_path / "conversations.sqlite3")
    saved = store.messages(store.conversations()[0].id)[-1]
    assert saved.id == message_id and saved.role == "assistant"
    assert len(saved.content) >= shown[-1] > 0 and store.check_integrity()


def test_a_loaded_pair_indexes_the_saved_conversations_for_lookup(qtbot, session: ChatSession, tiny_dirs) -> None:
    """Issue 14: lookup drafts from every saved conversation. Chats saved before a load are indexed in the
    background after it (engine tests show drafting from the index)."""
    conversation = session.new_conversation("Tell me a story")
    answer(qtbot, session, conversation, "Tell me a story about a lighthouse keeper and a storm")
    with qtbot.waitSignal(session.pair_loaded, timeout=30_000):
        session.load_pair(str(tiny_dirs[0]), "")  # a fresh pair: its history starts empty
    session.engine.history_indexing.join(timeout=120)
    pair = session.engine.pair
    pair.history.wait()
    assert pair.history.documents == 1
    prompt = pair.prompt_ids("Tell me a story about a lighthouse keeper and a storm")
    found = pair.history.continuation(prompt[:12], 4)
    assert found.match_length == 12 and found.tokens == prompt[12:16]


def test_each_chat_has_its_own_think_switch_and_a_new_chat_keeps_its_choice_until_saved(qtbot, session: ChatSession) -> None:
    assert session.think_for(None) is True  # the default from Settings
    session.set_think(None, False)
    assert session.think_for(None) is False
    chat = session.new_conversation("Hi")
    assert session.store.think(chat) is False and session.think_for(None) is True
    other = session.new_conversation("Hello")
    assert session.think_for(other) is True
    session.apply_settings(GREEDY.replace(think=False), "")
    assert session.think_for(other) is False  # a chat that never chose follows the default
    session.set_think(chat, True)
    assert session.think_for(chat) is True


def test_a_thinking_answer_is_saved_apart_from_its_reasoning_with_every_batch(qtbot, isolated_home, thinking_dirs) -> None:
    """What a crash mid-answer leaves must already keep the reasoning out of the answer (the next turn sends it)."""
    from engine.fixtures.tiny_thinking import ANSWER, REASONING

    AppSettings().save_params(GREEDY.replace(max_tokens=60))
    session = ChatSession()
    target, draft = thinking_dirs(False)
    with qtbot.waitSignal(session.pair_loaded, timeout=30_000):
        session.load_pair(str(target), str(draft))
    saved: list[tuple[str, str]] = []

    def look(streaming, events) -> None:
        stored = session.store.messages(streaming.conversation_id)[-1]
        saved.append((stored.content, stored.reasoning))

    session.answer_events.connect(look)
    try:
        chat = session.new_conversation("Capital of France?")
        with qtbot.waitSignal(session.answer_finished, timeout=60_000):
            session.send(chat, "Capital of France?")
        assert saved and all(ANSWER.startswith(content) and REASONING.startswith(reasoning) for content, reasoning in saved)
        stored = session.store.messages(chat)[-1]
        assert (stored.content, stored.reasoning) == (ANSWER, REASONING)
        assert [run[3] if len(run) == 4 else "answer" for run in stored.runs].count("reasoning") > 0
    finally:
        session.shutdown()


def _compare(qtbot, session: ChatSession, sides: tuple[str, str]) -> tuple[dict, dict, dict, dict]:
    """Run a Compare of `sides`; each side's result or failure message, and the drafters its rounds named."""
    finished: dict[str, object] = {}
    failed: dict[str, str] = {}
    drafters: dict[int, set[str]] = {}
    session.compare_events.connect(
        lambda request, events: drafters.setdefault(request, set()).update(e.drafter for e in events if isinstance(e, RoundEvent)))
    session.compare_finished.connect(lambda request, result: finished.__setitem__(request, result))
    session.compare_failed.connect(lambda request, message: failed.__setitem__(request, message))
    requests = session.compare(None, [{"role": "user", "content": "abcabd"}], sides)
    qtbot.waitUntil(lambda: len(finished) + len(failed) == 2, timeout=120_000)
    by_side = {side: finished.get(request) for side, request in requests.items()}
    return by_side, {side: failed.get(request) for side, request in requests.items()}, \
        {side: drafters.get(request, set()) for side, request in requests.items()}, requests


def _load(qtbot, session: ChatSession, target: object, draft: object = "") -> None:
    with qtbot.waitSignal(session.pair_loaded, timeout=60_000):
        session.load_pair(str(target), str(draft))


@pytest.mark.parametrize("pair, sides", [
    ("tiny", ("model", "lookup")),
    ("mtp", ("mtp", "standard")),
    ("eagle3", ("eagle3", "lookup")),
])
def test_compare_runs_each_side_with_the_drafter_asked_for(qtbot, session: ChatSession, pair: str, sides, mtp_target,
                                                           eagle3_pair) -> None:
    """Compare used to run standard against the chat's drafter only: two drafters could not meet on one prompt."""
    if pair == "mtp":
        _load(qtbot, session, mtp_target.folder("hybrid"))
    elif pair == "eagle3":
        _load(qtbot, session, *eagle3_pair.folders())
    results, failed, drafters, _ = _compare(qtbot, session, sides)
    assert failed == {side: None for side in sides}
    for side in sides:
        result = results[side]
        assert result.drafter == (side if side != "standard" else "none")
        assert drafters[side] - {"none"} == ({side} if side != "standard" else set()), side
        assert set(result.stats.drafted_by) == (drafters[side] - {"none"})
    speculative = [side for side in sides if side not in ("standard", "lookup")]
    assert all(results[side].stats.drafted > 0 for side in speculative)  # the drafter asked for really drafted
    first, second = (results[side] for side in sides)
    assert first.tokens == second.tokens and first.text == second.text  # greedy: the same answer whoever drafts


def test_a_drafter_the_pair_cannot_run_is_refused_in_one_line_and_the_other_side_runs(qtbot, session: ChatSession) -> None:
    results, failed, _, _ = _compare(qtbot, session, ("model", "mtp"))
    assert results["model"] is not None and results["model"].stats.drafted > 0
    assert failed["model"] is None and "no built-in MTP head" in failed["mtp"]
    assert "\n" not in failed["mtp"] and "Traceback" not in failed["mtp"]


def test_a_compare_of_one_way_against_itself_is_refused(session: ChatSession) -> None:
    with pytest.raises(InvalidParameterError, match="Both sides are lookup: choose two different ways"):
        session.compare(None, [{"role": "user", "content": "Hello"}], ("lookup", "lookup"))
    with pytest.raises(InvalidParameterError, match="Compare cannot run 'turbo'"):
        session.compare(None, [{"role": "user", "content": "Hello"}], ("standard", "turbo"))
