"""Screenshots of MCP tools in the app: an answer with a tool call's card asking, then the same answer with the
result folded and the answer that went on after it, and the MCP section of Settings.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python -m tests.benchmarks.mcp_screenshots OUT_DIR [dark]

Each picture is what Qt draws for the window or dialog (QWidget.grab), so no window manager is needed.

The tiny tool pair (Qwen2.5's template) is built in a temporary folder and offered the tests' FastMCP demo
server; its answer to the question is the scripted call (tests/app/scripted_calls.py), the answer after the
result is generated for real with its draft model. The window fills the screen, so a 900x600 screen shows the
narrow layout. Writes mcp-ask[-dark].png, mcp-result[-dark].png and mcp-settings[-dark].png.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from PySide6.QtWidgets import QApplication

from tests.benchmarks.screenshots import dark_palette, pump


def main(out: Path, dark: bool = False) -> int:
    os.environ["SPECCHAT_HOME"] = home = tempfile.mkdtemp(prefix="specchat-mcp-shots-")
    return take(Path(home), out, "-dark" if dark else "")


def grab(widget, path: Path) -> None:
    """What Qt draws for the widget (no window manager or xwd needed; the window's frame is left out)."""
    widget.grab().save(str(path))


def take(home: Path, out: Path, suffix: str) -> int:
    import engine.decoding.generation as generation
    from engine.fixtures.tiny_tool_model import build_tool_pair
    from tests.app.scripted_calls import ADD_CALL, ScriptedCalls
    from tests.engine.mcp_tools.test_hub import DEMO

    app = QApplication(sys.argv[:1])
    if suffix:
        app.setStyle("Fusion")
        app.setPalette(dark_palette())
    target, draft = build_tool_pair(home / "models")
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": [DEMO]}, "notes": {"url": "http://127.0.0.1:9/mcp"}}}))
    generation.generate_stream = ScriptedCalls(ADD_CALL)
    from app.main_window import MainWindow
    from app.settings_dialog import SettingsDialog
    from app.tool_call_card import ToolCallCard
    from engine.params import GenerationParams

    window = MainWindow(open_picker_if_needed=False)
    window.move(0, 0)
    window.resize(app.primaryScreen().availableGeometry().size())
    window.show()
    window.session.load_pair(str(target), str(draft))
    pump(app, lambda: window.session.pair is not None and window.session.tools.servers.hub is not None, 120)
    window.apply_settings(GenerationParams(temperature=0.0, adaptive=False, num_draft=4, max_tokens=60), "")
    window.input.setPlainText("What is 2 + 40? Use the add tool.")
    window.send()
    cards = lambda: [c for m in window.chat.messages for c in m.findChildren(ToolCallCard)]
    pump(app, lambda: bool(cards()) and not cards()[0].ask_row.isHidden(), 60)
    pump(app, seconds=0.5)
    grab(window, out / f"mcp-ask{suffix}.png")
    cards()[0].buttons["once"].click()
    pump(app, lambda: len(window.chat.messages) == 3 and not window.session.busy, 120)
    cards()[0].expand(True)
    pump(app, seconds=0.5)
    grab(window, out / f"mcp-result{suffix}.png")
    dialog = SettingsDialog(window.session.params, "", window, mcp=window.session.tools.servers)
    dialog.move(0, 0)
    dialog.show()
    pump(app, seconds=1.0)
    grab(dialog, out / f"mcp-settings{suffix}.png")
    dialog.reject()
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), dark=sys.argv[2:] == ["dark"]))
