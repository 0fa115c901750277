"""`specchat --self-test`: prove the app works end to end, without a screen or a download.

It opens the real main window offscreen, loads a pair (tiny built-in random models unless --target is given),
generates a short answer speculatively, checks that coloured tokens and statistics appeared, asks the
local server (OpenAI-compatible, on a free loopback port) for a short answer, and calls an MCP tool. It prints
one line and exits 0, or prints the reason and exits 1. Settings and conversations go to a temporary folder,
never the user's. The packaged app runs it in CI, so a module or data file missing from the bundle fails there.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

TIMEOUT_S = 300.0
PROMPT = "Say hello and count to five."


def _wait(app, condition: Callable[[], bool], timeout: float) -> bool:  # QApplication
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        app.processEvents()
        time.sleep(0.005)
    return True


def _check(window, result) -> str | None:  # MainWindow, GenerationResult
    """The reason the self-test failed, or None."""
    answer = window.chat.messages[-1] if window.chat.messages else None
    if answer is None or answer.role != "assistant" or not answer.body.runs:
        return "no answer appeared in the chat"
    coloured = {run.origin for run in answer.body.runs} & {"accepted", "corrected", "bonus"}
    if not coloured:
        return "the answer has no coloured (speculative) tokens"
    if window.stats.values["drafted"].text() in ("–", "0") or not answer.stats.text():
        return "the statistics did not appear"
    if result.stats.drafted == 0:
        return "nothing was drafted"
    return None


def _check_server(window) -> str | None:  # MainWindow
    """Serve on a free loopback port and ask for a short completion (the bundle must carry the server's stack)."""
    import json
    import urllib.request

    server = window.server_dialog.server
    if not server.start(port=0):
        return "the local server did not start"
    try:
        body = json.dumps({"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 4}).encode()
        request = urllib.request.Request(server.address + "/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            reply = json.loads(response.read())
        if reply["usage"]["completion_tokens"] < 1 or "speculation" not in reply:
            return f"the local server's reply lacks tokens or stats: {reply}"
        return None
    except OSError as error:
        return f"the local server did not answer: {error}"
    finally:
        server.stop()


def _check_mcp() -> str | None:
    """Serve a one-tool MCP server over streamable HTTP on a free loopback port and call its tool through the app's
    hub (the bundle must carry the `mcp` SDK; a frozen app cannot launch a Python stdio server, so HTTP it is)."""
    from mcp.server.mcpserver import MCPServer

    from engine.mcp_tools.hub import McpHub
    from engine.mcp_tools.servers_config import ServerConfig
    from engine.serving.listener import RunningServer, bind

    server = MCPServer("self-test")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Adds two integers."""
        return str(a + b)

    running = RunningServer(server.streamable_http_app(), bind("127.0.0.1", 0), lifespan=True)
    running.start()
    hub = McpHub([ServerConfig("self-test", url=f"http://127.0.0.1:{running.port}/mcp")], timeout=TIMEOUT_S)
    try:
        hub.start()
        outcome = hub.call("add", {"a": 2, "b": 3})
        return None if outcome.text == "5" and not outcome.is_error else f"the MCP tool answered {outcome.text!r}"
    finally:
        hub.close()
        running.stop()


def run_self_test(target: str | None = None, draft: str | None = None) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory(prefix="specchat-self-test-") as home:
        os.environ["SPECCHAT_HOME"] = home
        started = time.monotonic()
        try:
            return _run(Path(home), target, draft, started)
        except Exception as error:  # noqa: BLE001 - one line on stdout; the details on stderr for CI logs
            print(f"self-test failed: {type(error).__name__}: {error}")
            traceback.print_exc(file=sys.stderr)
            return 1


def _quiet_offscreen_notices(mode, context, message: str) -> None:  # Qt message handler
    """The offscreen platform says what it cannot do (raise windows, size hints); nothing else is dropped."""
    if "This plugin does not support" not in message:
        sys.stderr.write(message + "\n")


def _application():  # QApplication
    """The app's QApplication, collecting garbage on its own thread as the app does. One that runs already (the
    test suite's, which runs the self-test in its own process too) keeps its own message handler and collection."""
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from .garbage_collection import GuiThreadCollection

    if running := QApplication.instance():
        return running
    qInstallMessageHandler(_quiet_offscreen_notices)
    app = QApplication(sys.argv[:1])
    GuiThreadCollection(app)
    return app


def _run(home: Path, target: str | None, draft: str | None, started: float) -> int:
    from engine.events import GenerationResult
    from engine.params import GenerationParams

    if target is None:
        from engine.fixtures.tiny_models import build_tiny_pair

        target_dir, draft_dir = build_tiny_pair(home / "models")
        target, draft = str(target_dir), str(draft_dir)

    from .main_window import MainWindow

    app = _application()
    window = MainWindow(open_picker_if_needed=False)
    try:
        results: list[GenerationResult] = []
        failures: list[str] = []
        window.session.answer_finished.connect(lambda answer, result, summary: results.append(result))
        window.session.answer_failed.connect(lambda answer, message: failures.append(message))
        window.show()
        window.session.load_pair(target, draft or "")
        if not _wait(app, lambda: window.session.pair is not None or not window.error_banner.isHidden(), TIMEOUT_S):
            print("self-test failed: the models did not load in time")
            return 1
        if window.session.pair is None:
            print(f"self-test failed: {window.error_banner.text()}")
            return 1
        # Greedy with a fixed draft length, so that drafts happen whatever the hardware's costs.
        window.apply_settings(
            GenerationParams(temperature=0.0, top_p=1.0, adaptive=False, num_draft=4, max_tokens=24), ""
        )
        window.input.setPlainText(PROMPT)
        window.send()
        if not _wait(app, lambda: bool(results or failures), TIMEOUT_S):
            print("self-test failed: no answer in time")
            return 1
        if failures:
            print(f"self-test failed: {failures[0]}")
            return 1
        result = results[0]
        reason = _check(window, result) or _check_server(window) or _check_mcp()
        if reason:
            print(f"self-test failed: {reason}")
            return 1
        info = window.session.pair
        pair = info.target_name + (f" with draft {info.draft_name}" if info.draft_name else "")
        print(
            f"self-test passed: {pair}: {result.summary()}; coloured tokens and stats shown, the local server and an MCP tool answered "
            f"({time.monotonic() - started:.1f} s)"
        )
        return 0
    finally:
        window.close()
