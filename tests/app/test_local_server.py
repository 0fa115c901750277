"""The app's Local server: the loaded pair served on loopback from the engine worker's thread, with a log."""

from __future__ import annotations

import threading
import time

import httpx
import openai

from app.message_widget import WAITING_FOR_SERVER
from engine.decoding.generation import generate
from engine.events import TokenEvent
from engine.params import GenerationParams
from engine.serving.generation_queue import GenerationJob
from engine.serving.listener import bind

from .conftest import FIXED_GREEDY

QUESTION = [{"role": "user", "content": "Tell me about the sea."}]


def start(qtbot, window) -> str:
    window.toolbar.server_action.trigger()
    dialog = window.server_dialog
    assert dialog.isVisible()
    dialog.port.setValue(_free_port())
    dialog.switch.click()
    assert dialog.switch.isChecked() and dialog.switch.text() == "Stop serving"
    return window.server_dialog.server.address


def _free_port() -> int:
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_the_switch_serves_the_loaded_pair_with_the_windows_settings(qtbot, make_window, tiny_pair) -> None:
    window = make_window()
    address = start(qtbot, window)
    assert window.serving.text() == f"Serving {address}"
    client = openai.OpenAI(base_url=address, api_key="any", max_retries=0)
    response = client.chat.completions.create(model=client.models.list().data[0].id, messages=QUESTION, max_tokens=20)
    params = GenerationParams.preset("default").replace(**{**FIXED_GREEDY, "max_tokens": 20})
    assert response.choices[0].message.content == generate(QUESTION, tiny_pair, params).text
    assert response.model_extra["speculation"]["drafted"] > 0
    qtbot.waitUntil(lambda: "POST /v1/chat/completions 200" in window.server_dialog.log.toPlainText(), timeout=10_000)


def test_stopping_frees_the_port_and_bad_requests_are_logged(qtbot, make_window) -> None:
    window = make_window()
    address = start(qtbot, window)
    refused = httpx.post(address + "/chat/completions", json={"messages": []})
    assert refused.status_code == 400
    qtbot.waitUntil(lambda: "400" in window.server_dialog.log.toPlainText(), timeout=10_000)
    port = int(address.rsplit(":", 1)[1].split("/")[0])
    window.server_dialog.switch.click()
    assert window.server_dialog.server.running is None and window.serving.text() == ""
    bind("127.0.0.1", port).close()  # free again


def test_stopping_mid_answer_closes_the_stream_and_says_the_server_stopped(qtbot, make_window) -> None:
    """Stop serving cut a streamed answer without its [DONE] after the shutdown's grace, logged "499 cancelled: the
    client went away" and printed a CancelledError traceback. The answer now ends within a round, closed."""
    window = make_window(max_tokens=900)
    address = start(qtbot, window)
    first_chunk, lines = threading.Event(), []

    def read() -> None:
        body = {"messages": QUESTION, "stream": True, "max_tokens": 900}
        with httpx.stream("POST", address + "/chat/completions", json=body, timeout=60) as response:
            for line in response.iter_lines():
                lines.append(line)
                if '"content": "' in line and '"content": ""' not in line:
                    first_chunk.set()

    reader = threading.Thread(target=read)
    reader.start()
    qtbot.waitUntil(first_chunk.is_set, timeout=30_000)
    window.server_dialog.switch.click()
    reader.join(30)
    events = [line for line in lines if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"  # closed as OpenAI closes a stream
    assert len(events) < 900 / 2  # cancelled within a round, not run to its end in the shutdown's grace
    qtbot.waitUntil(lambda: "stopped with the server" in window.server_dialog.log.toPlainText(), timeout=10_000)
    assert "client went away" not in window.server_dialog.log.toPlainText()


def test_the_port_served_on_is_offered_at_the_next_launch(qtbot, make_window) -> None:
    """8080 was taken, the user served on another port, and the next launch offered 8080 again."""
    window = make_window()
    address = start(qtbot, window)
    window.server_dialog.switch.click()
    again = make_window(keep_settings=True)
    assert again.server_dialog.port.value() == int(address.rsplit(":", 1)[1].split("/")[0])


def test_a_port_in_use_is_shown_and_the_switch_stays_off(qtbot, make_window) -> None:
    window = make_window()
    taken = bind("127.0.0.1", 0)
    try:
        window.server_dialog.port.setValue(taken.getsockname()[1])
        window.server_dialog.switch.click()
        assert not window.server_dialog.switch.isChecked()
        assert "in use. Pick another port in the Port box" in window.server_dialog.address.text()
    finally:
        taken.close()


def test_without_a_loaded_pair_requests_get_a_503_saying_so(qtbot, make_window) -> None:
    window = make_window(pair=None)
    address = start(qtbot, window)
    response = httpx.post(address + "/chat/completions", json={"messages": QUESTION})
    assert response.status_code == 503 and "No model pair is loaded" in response.json()["error"]["message"]


def test_a_chat_answer_and_a_server_request_both_finish(qtbot, make_window) -> None:
    window = make_window()
    address = start(qtbot, window)
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        window.input.setPlainText("Hello")
        window.send()
        served = httpx.post(address + "/completions", json={"prompt": "The sea", "max_tokens": 8}, timeout=60)
    assert served.status_code == 200 and served.json()["usage"]["completion_tokens"] > 0
    assert window.chat.messages[-1].role == "assistant"


def hold_a_server_job(window) -> tuple[threading.Event, threading.Event]:
    """A server request's job running on the worker, held at its first event until released: (held, release)."""
    held, release = threading.Event(), threading.Event()

    def deliver(event: object) -> None:  # on the worker's thread
        held.set()
        release.wait(60)

    params = window.session.params.replace(max_tokens=4)
    window.server_dialog.server.runner.submit(GenerationJob("The sea", False, params, deliver))
    return held, release


def test_a_chat_answer_behind_a_server_request_says_it_waits_and_its_first_token_figures_agree(qtbot, make_window) -> None:
    """The answer sat empty with no word of why, and the panel's first-token figure counted the wait while the
    stats line's did not."""
    window = make_window()
    held, release = hold_a_server_job(window)
    try:
        qtbot.waitUntil(held.is_set, timeout=30_000)
        window.input.setPlainText("Hello")
        window.send()
        answer = window.chat.messages[-1]
        assert answer.notice.text() == WAITING_FOR_SERVER and not answer.notice.isHidden()
        first: list[tuple[float, str, bool]] = []  # when the first token reached the window, the panel's figure, the note gone

        def at_first_token(_answer, events: list[object]) -> None:  # StreamingAnswer
            if not first and any(isinstance(e, TokenEvent) for e in events):
                first.append((time.perf_counter(), window.stats.values["ttft"].text(), answer.notice.isHidden()))

        window.session.answer_events.connect(at_first_token)
        clock_starts: list[float] = []  # when the panel (re)started its clock for an answer
        reset = window.stats.reset
        window.stats.reset = lambda *args, **kwargs: (clock_starts.append(time.perf_counter()), reset(*args, **kwargs))
        with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as finished:
            released_at = time.perf_counter()
            release.set()
    finally:
        release.set()
    streaming, result, summary = finished.args
    seen_at, live_ttft, note_gone = first[0]
    assert note_gone  # the note goes once the answer runs
    # The panel's clock started when the worker took the answer up, after the server's request: so the figure it
    # showed at the first token left the wait out, as the engine's does.
    assert clock_starts and clock_starts[-1] >= released_at
    assert float(live_ttft.split()[0]) <= seen_at - released_at + 0.01
    waited = f"first after {result.stats.ttft_s:.2f} s (after waiting {streaming.waited_s:.2f} s for a server request)"
    assert streaming.waited_s > 0 and waited in summary and answer.stats.text() == summary
    assert window.stats.values["ttft"].text() == f"{result.stats.ttft_s:.2f} s + {streaming.waited_s:.2f} s waiting"
    assert "Local server" in window.stats.values["ttft"].toolTip() and "Local server" in answer.stats.toolTip()
