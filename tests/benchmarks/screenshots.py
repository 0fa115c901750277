"""Take the screenshots of the README and docs/app.md as a person sees the app: on an X display, with xwd.

    apt-get install xvfb x11-apps imagemagick openbox
    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python -m tests.benchmarks.screenshots TARGET DRAFT OUT_DIR

A window manager (openbox) runs for the duration: without one, Xvfb never exposes a second top-level window
(the Compare dialog stays black), and windows have no title bars.

main-window.png: an answer mid-generation with a draft model (fixed K, so every colour shows; sampled at
temperature 0.7, so that p(d) and q(d) in the tooltips are probabilities rather than greedy's 0s and 1s).
chat-features.png: a finished answer as Markdown (a highlighted code block with its Copy link), the question
edited into a second branch ("‹ 2/2 ›"), and the chat search in use.
compare.png: Compare on a code-editing prompt with prompt lookup, after both runs finished.
local-server.png: the Local server window serving that pair, after one answered request and one refused.
visualizer.png: that answer finished, as coloured tokens with its rejected drafts, a correction's tooltip, and
the round timeline; cost-card.png and positions.png: the side panel's Cost and Positions tabs.
With a fourth argument `dark`: main-window-dark.png, visualizer-dark.png and cost-card-dark.png, in a dark
palette (what macOS's dark mode gives Qt), to check that the tints stay readable.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

EDIT_PROMPT = (
    "Rename the attribute `items` to `values` in this class and return the whole class:\n\n"
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n"
    "        self.items.append(item)\n\n    def pop(self):\n        return self.items.pop()\n\n"
    "    def size(self):\n        return len(self.items)\n"
)


def pump(app: QApplication, condition=lambda: False, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)


def grab(widget, path: Path) -> None:
    """A real screenshot of the X display, cropped to the widget's frame (a window) or to the widget (a part)."""
    if widget.isWindow():
        g = widget.frameGeometry()
        x, y, w, h = g.x(), g.y(), g.width(), g.height()
    else:
        corner = widget.mapToGlobal(widget.rect().topLeft())
        x, y, w, h = corner.x(), corner.y(), widget.width(), widget.height()
    subprocess.run(f"xwd -root -silent | convert xwd:- -crop {w}x{h}+{x}+{y} +repage {path}", shell=True, check=True)
    for tip in (t for t in QApplication.topLevelWidgets() if t.isVisible() and t.inherits("QTipLabel")):
        # Xvfb shows a tooltip's window black (it is never exposed): paste in what Qt draws for it instead.
        overlay = Path(tempfile.mkdtemp()) / "tip.png"
        tip.grab().save(str(overlay))
        at = tip.geometry()
        subprocess.run(["convert", str(path), str(overlay), "-geometry", f"+{at.x() - x}+{at.y() - y}", "-composite", str(path)],
                       check=True)


def main(target: str, draft: str, out: Path, dark: bool = False) -> int:
    os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp(prefix="specchat-shots-")
    window_manager = subprocess.Popen(["openbox"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    try:
        return take(target, draft, out, dark)
    finally:
        window_manager.terminate()


def dark_palette() -> QPalette:
    from PySide6.QtGui import QColor

    palette = QPalette()
    for role, colour in [("Window", "#1e1e1e"), ("WindowText", "#e6e6e6"), ("Base", "#252526"), ("Text", "#e6e6e6"),
                         ("Button", "#2d2d2d"), ("ButtonText", "#e6e6e6"), ("Mid", "#8a8a8a"), ("Highlight", "#2f65ca"),
                         ("AlternateBase", "#2a2a2a"), ("ToolTipBase", "#2d2d2d"), ("ToolTipText", "#e6e6e6"),
                         ("PlaceholderText", "#8a8a8a")]:
        palette.setColor(getattr(QPalette.ColorRole, role), QColor(colour))
    for role in ("WindowText", "Text", "ButtonText"):  # as a system dark palette has them: greyed when disabled
        palette.setColor(QPalette.ColorGroup.Disabled, getattr(QPalette.ColorRole, role), QColor("#6e6e6e"))
    return palette


def application(dark: bool) -> QApplication:
    """The app, in the dark palette when asked (Fusion: the style that follows a palette everywhere)."""
    app = QApplication(sys.argv[:1])
    if dark:
        app.setStyle("Fusion")
        app.setPalette(dark_palette())
    return app


def take(target: str, draft: str, out: Path, dark: bool = False) -> int:
    app = application(dark)
    from app.main_window import MainWindow
    from engine.params import GenerationParams

    window = MainWindow(open_picker_if_needed=False)
    window.move(0, 0)
    window.show()
    window.session.load_pair(target, draft)
    pump(app, lambda: window.session.pair is not None, 120)
    window.apply_settings(GenerationParams(temperature=0.7, top_p=0.95, adaptive=False, num_draft=4, max_tokens=220, seed=7), "")
    window.input.setPlainText("Write a Python function that checks whether a string is a palindrome, and explain it.")
    window.send()
    pump(app, seconds=14)
    grab(window, out / ("main-window-dark.png" if dark else "main-window.png"))
    window.stop()
    pump(app, lambda: not window.session.busy, 60)
    visualizer(app, window, out, "-dark" if dark else "")
    if dark:
        window.close()
        return 0
    chat_features(app, window, out)

    window.session.load_pair(target, "")
    pump(app, lambda: window.session.pair is not None and not window.session.pair.draft, 120)
    window.apply_settings(GenerationParams(temperature=0.0, top_p=1.0, max_tokens=160), "")
    window.session.choose_drafter("lookup")
    window.new_conversation()
    window.input.setPlainText(EDIT_PROMPT)
    window.compare()
    dialog = window.compare_dialog
    dialog.move(0, 0)
    pump(app, lambda: len(dialog.results) == 2, 600)
    pump(app, seconds=1.0)
    grab(dialog, out / "compare.png")
    print(dialog.speedup.text())
    local_server(app, window, out)
    window.close()
    return 0


def local_server(app: QApplication, window, out: Path) -> None:  # MainWindow
    """The Local server window after a client's answered request and a refused one (Qt's own rendering of it:
    Xvfb leaves this window black, as it never exposes it)."""
    import json
    import threading
    import urllib.error
    import urllib.request

    dialog = window.server_dialog
    dialog.show()
    dialog.switch.click()
    address = dialog.server.address

    def ask(body: dict) -> None:
        request = urllib.request.Request(address + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=120).read()
        except urllib.error.HTTPError:
            pass  # the refusal is what the log shows

    question = {"messages": [{"role": "user", "content": "Repeat exactly: the quick brown fox jumps over the lazy dog."}]}
    client = threading.Thread(target=lambda: (ask({**question, "max_tokens": 40}), ask({**question, "model": "gpt-4"})))
    client.start()
    pump(app, lambda: not client.is_alive(), 180)
    pump(app, seconds=1.0)
    dialog.grab().save(str(out / "local-server.png"))
    dialog.switch.click()


def visualizer(app: QApplication, window, out: Path, suffix: str) -> None:  # MainWindow
    """The finished answer as coloured tokens with its rejected drafts, a correction explained, and the tabs."""
    from PySide6.QtWidgets import QToolTip

    from app.token_view import ORIGIN_PROPERTY

    window.toolbar.markdown_action.setChecked(False)
    tabs = window.stats.tabs
    tabs.setCurrentIndex(1)  # Rounds
    pump(app, seconds=1.0)
    view = window.chat.messages[-1].body
    def place(fragment):  # QTextFragment, QRect
        cursor = view.textCursor()
        cursor.setPosition(fragment.position())
        return view.cursorRect(cursor)

    fragment = next(f for f in view.token_fragments() if f.charFormat().property(ORIGIN_PROPERTY) == "corrected"
                    and len(f.text().strip()) > 1 and f.position() > 150 and place(f).x() < 350)
    rect = place(fragment)
    QToolTip.showText(view.viewport().mapToGlobal(rect.bottomRight()), view.tooltip_at(fragment.position()), view)
    pump(app, seconds=1.0)
    grab(window, out / f"visualizer{suffix}.png")
    QToolTip.hideText()
    for index, name in ((3, "cost-card"), (2, "positions")):
        if name == "positions" and suffix:
            continue
        tabs.setCurrentIndex(index)
        pump(app, seconds=1.0)
        grab(window.stats, out / f"{name}{suffix}.png")
    tabs.setCurrentIndex(0)


def chat_features(app: QApplication, window, out: Path) -> None:  # MainWindow
    """An answer with code as Markdown (the visualizer before it switched Markdown off), its question asked again
    differently (a second branch), and the search box."""
    window.toolbar.markdown_action.setChecked(True)
    window.new_conversation()
    window.input.setPlainText("Write a Python function that reverses a string.")
    window.send()
    pump(app, lambda: not window.session.busy, 120)
    question = window.chat.messages[0]
    question.start_editing()
    question.editor.setPlainText("Write a Python function that reverses a list.")
    question.send_edit.click()
    pump(app, lambda: not window.session.busy, 120)
    window.conversations.search.setText("Python")
    pump(app, seconds=1.0)
    grab(window, out / "chat-features.png")
    window.conversations.search.clear()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), dark=sys.argv[4:] == ["dark"]))
