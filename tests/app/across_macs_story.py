"""Run by tests/app/test_across_macs.py in a pytest process of its own: MLX keeps the first ring a process joins for
the rest of its life (`mx.distributed.init` returns it again, peers gone or not), so a test that joins one must not
share its process with the tests that make a group of one.

The app with its target across two Macs (a real second rank on loopback, MLX's ring backend): answers as one process
would, through Stop, a new chat and Regenerate; the network's share shown; and a Mac killed mid-answer gives one error
naming it, keeps the chat, and brings the app back to this Mac alone. One story, one join.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from app.main_window import MainWindow
from app.settings import AppSettings
from engine import ModelPair, generate
from engine.distributed.app_head import PORT_ENV
from engine.distributed.local_launch import first_of_free_ports
from engine.params import GenerationParams
from tests.app.conftest import send_and_wait, start_long_answer

SHORT = 20
LOADS_S = 180


def loopback_hostfile(folder: Path, size: int) -> Path:
    path = folder / "hosts.json"
    path.write_text(json.dumps({"hosts": [{"ssh": "127.0.0.1", "ips": ["127.0.0.1"]}] * size}))
    return path


class Alone:
    """The reference: single-process standard decoding of the same conversations, in the same order, on one pair
    (a pair remembers its answers' ids for the turns that quote them, so the order matters)."""

    def __init__(self, target: Path, params: GenerationParams) -> None:
        self.pair = ModelPair.load(str(target))
        self.params = params.replace(mode="standard")

    def __call__(self, messages: list[dict], tokens: int = SHORT) -> list[int]:
        return generate(messages, self.pair, self.params.replace(max_tokens=tokens)).tokens


def answered(window: MainWindow) -> tuple[list[dict], list[dict]]:
    """The shown chat's history before its last answer, and that answer's saved trace."""
    messages = window.session.store.messages(window.conversation_id)
    return window.session.history(window.conversation_id)[:-1], messages[-1].trace


def set_length(window: MainWindow, tokens: int) -> None:
    window.session.apply_settings(window.session.params.replace(max_tokens=tokens), "")


@pytest.fixture
def across_two(qtbot, isolated_home, dense_models, tmp_path, monkeypatch):
    """A window whose pair (the tiny qwen2 target and its draft) loads across two loopback Macs."""
    target, draft = dense_models("qwen2")
    monkeypatch.setenv(PORT_ENV, str(first_of_free_ports(2)))
    settings = AppSettings()
    settings.save_pair(str(target), str(draft))
    settings.save_cluster_hosts(str(loopback_hostfile(tmp_path, 2)))
    params = GenerationParams.preset("greedy", max_tokens=SHORT, drafter="model", adaptive=False, num_draft=3, history=False)
    settings.save_params(params)
    window = MainWindow(open_picker_if_needed=False)
    window.ask_before_quitting = False
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.session.pair is not None or not window.error_banner.isHidden(), timeout=LOADS_S * 1000)
    assert window.session.pair is not None, window.error_banner.text()
    yield window, target, params
    window.close()


@pytest.mark.distributed
def test_across_two_macs(across_two, qtbot) -> None:
    window, target, params = across_two
    session, alone = window.session, Alone(target, params)
    assert session.pair.macs == 2 and "target across 2 Macs" in window.toolbar.pair_label.text()
    assert session.pair.layout.startswith("The target runs across 2 Macs: 127.0.0.1 (rank 1) layers 0-")

    first = send_and_wait(qtbot, window, "Tell me about the sea.")
    history, trace = answered(window)
    reference = alone(history)
    assert first.tokens == reference and first.stats.drafted > first.stats.accepted > 0  # drafts kept and trimmed
    assert all(r["network_s"] > 0 for r in trace)  # every round crossed the ring
    assert window.stats._form.isRowVisible(window.stats.values["network"])

    with qtbot.waitSignal(session.answer_finished, timeout=120_000) as regenerated:
        window.regenerate()
    assert regenerated.args[1].tokens == alone(history) == reference  # a Regenerate goes back past the answer everywhere

    set_length(window, 400)
    start_long_answer(qtbot, window, "Tell me a long story")
    with qtbot.waitSignal(session.answer_finished, timeout=120_000) as stopped:
        window.stop()
    assert stopped.args[1].finish_reason == "cancelled"
    cut = stopped.args[1].tokens
    assert alone(answered(window)[0], len(cut)) == cut
    set_length(window, SHORT)
    follow_up = send_and_wait(qtbot, window, "And then?")  # the stopped answer's positions trimmed everywhere
    assert follow_up.tokens == alone(answered(window)[0])

    window.new_conversation()
    fresh = send_and_wait(qtbot, window, "Count to ten.")
    assert fresh.tokens == alone([{"role": "user", "content": "Count to ten."}])

    pid = session.engine.cluster.followers.pids[1]
    set_length(window, 400)
    start_long_answer(qtbot, window, "Tell me a long story")
    with qtbot.waitSignal(session.answer_failed, timeout=120_000) as failed:
        os.kill(pid, signal.SIGKILL)
    message = failed.args[1]
    assert message.startswith("Lost the Mac 127.0.0.1 (rank 1) mid-answer") and "on this Mac alone again" in message
    kept = session.store.messages(window.conversation_id)[-1]
    assert kept.role == "assistant" and kept.content and kept.finish == "error"  # the answer so far is kept
    assert AppSettings().cluster_hosts() == ""
    qtbot.waitUntil(lambda: session.pair is not None and not session.loading, timeout=LOADS_S * 1000)
    assert session.pair.macs == 1 and "across" not in window.toolbar.pair_label.text()
    assert not window.error_banner.isHidden() and window.error_banner.text() == message  # still says why

    set_length(window, SHORT)
    window.new_conversation()
    send_and_wait(qtbot, window, "Tell me about the sea.")
    assert all(r["network_s"] is None for r in answered(window)[1])
    assert not window.stats._form.isRowVisible(window.stats.values["network"])


@pytest.mark.distributed
def test_quitting_says_goodbye_to_every_mac(across_two, qtbot) -> None:
    window, _, _ = across_two
    send_and_wait(qtbot, window, "Tell me about the sea.")
    followers = window.session.engine.cluster.followers
    window.close()  # the window's own shutdown: the worker stops the pipeline before its thread ends
    assert [process.wait(timeout=30) for process in followers.processes.values()] == [0]  # a goodbye, not "lost the head"
