"""The app's Local server: the loaded pair served on loopback from the engine worker's thread, with a log."""

from __future__ import annotations

import httpx
import openai

from engine.decoding.generation import generate
from engine.params import GenerationParams
from engine.tools.server import bind

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
