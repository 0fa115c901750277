"""Take the README's screenshots as a person sees the app: on an X display (run under xvfb-run), with xwd.

    apt-get install xvfb x11-apps imagemagick openbox
    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python -m tests.benchmarks.screenshots TARGET DRAFT OUT_DIR

A window manager (openbox) runs for the duration: without one, Xvfb never exposes a second top-level window
(the Compare dialog stays black), and windows have no title bars.

main-window.png: an answer mid-generation with a draft model (fixed K, greedy, so every colour shows).
chat-features.png: a finished answer as Markdown (a highlighted code block with its Copy link), the question
edited into a second branch ("‹ 2/2 ›"), and the chat search in use.
compare.png: Compare on a code-editing prompt with prompt lookup, after both runs finished.
With a fourth argument `dark`: main-window-dark.png only, in a dark palette (what macOS's dark mode gives Qt),
to check that the token tints stay readable.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    """A real screenshot of the X display, cropped to the widget's frame."""
    g = widget.frameGeometry()
    subprocess.run(f"xwd -root -silent | convert xwd:- -crop {g.width()}x{g.height()}+{g.x()}+{g.y()} {path}", shell=True, check=True)


def main(target: str, draft: str, out: Path, dark: bool = False) -> int:
    os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp(prefix="specchat-shots-")
    window_manager = subprocess.Popen(["openbox"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    try:
        return take(target, draft, out, dark)
    finally:
        window_manager.terminate()


def dark_palette() -> "QPalette":
    from PySide6.QtGui import QColor, QPalette

    palette = QPalette()
    for role, colour in [("Window", "#1e1e1e"), ("WindowText", "#e6e6e6"), ("Base", "#252526"), ("Text", "#e6e6e6"),
                         ("Button", "#2d2d2d"), ("ButtonText", "#e6e6e6"), ("Mid", "#8a8a8a"), ("Highlight", "#2f65ca"),
                         ("AlternateBase", "#2a2a2a"), ("ToolTipBase", "#2d2d2d"), ("ToolTipText", "#e6e6e6"),
                         ("PlaceholderText", "#8a8a8a")]:
        palette.setColor(getattr(QPalette.ColorRole, role), QColor(colour))
    for role in ("WindowText", "Text", "ButtonText"):  # as a system dark palette has them: greyed when disabled
        palette.setColor(QPalette.ColorGroup.Disabled, getattr(QPalette.ColorRole, role), QColor("#6e6e6e"))
    return palette


def take(target: str, draft: str, out: Path, dark: bool = False) -> int:
    app = QApplication(sys.argv[:1])
    if dark:
        app.setStyle("Fusion")
        app.setPalette(dark_palette())
    from app.main_window import MainWindow
    from engine.params import GenerationParams

    window = MainWindow(open_picker_if_needed=False)
    window.move(0, 0)
    window.show()
    window.session.load_pair(target, draft)
    pump(app, lambda: window.session.pair is not None, 120)
    window.apply_settings(GenerationParams(temperature=0.0, top_p=1.0, adaptive=False, num_draft=4, max_tokens=220), "")
    window.input.setPlainText("Write a Python function that checks whether a string is a palindrome, and explain it.")
    window.send()
    pump(app, seconds=14)
    grab(window, out / ("main-window-dark.png" if dark else "main-window.png"))
    window.stop()
    pump(app, lambda: not window.session.busy, 60)
    if dark:
        window.close()
        return 0
    chat_features(app, window, out)

    window.session.load_pair(target, "")
    pump(app, lambda: window.session.pair is not None and not window.session.pair.draft, 120)
    window.apply_settings(GenerationParams(temperature=0.0, top_p=1.0, drafter="lookup", max_tokens=160), "")
    window.new_conversation()
    window.input.setPlainText(EDIT_PROMPT)
    window.compare()
    dialog = window.compare_dialog
    dialog.move(0, 0)
    pump(app, lambda: len(dialog.results) == 2, 600)
    pump(app, seconds=1.0)
    grab(dialog, out / "compare.png")
    print(dialog.speedup.text())
    window.close()
    return 0


def chat_features(app: QApplication, window, out: Path) -> None:  # noqa: ANN001 - MainWindow
    """An answer with code, its question asked again differently (a second branch), and the search box."""
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
