"""Screenshots of the drafter choice: the main window with the toolbar's Drafter list open, and the picker for a
target with built-in MTP heads (what is loaded beside it: "No draft model"), at one window size, light or dark.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python -m tests.benchmarks.drafter_screenshots OUT_DIR 1600 1000 [dark]

The window is captured from the X display with ImageMagick's `import -window root` (the open list is a window of
its own, which `QWidget.grab` leaves out), cropped to the main window; the picker with `QWidget.grab`. Tiny random
models stand in for real ones (`engine/fixtures/`): the list and the picker show the same entries for any pair of
the same kinds. Writes drafter-choice[-WxH][-dark].png (a target and its draft model),
drafter-choice-mtp[-WxH][-dark].png (a target with MTP heads, alone) and picker-no-draft[-WxH][-dark].png.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.benchmarks.screenshots import application, pump


def screen_crop(widget, path: Path) -> None:
    """The X display, cropped to a window's frame: what a person sees there, open lists included."""
    g = widget.frameGeometry()
    subprocess.run(["import", "-window", "root", "-crop", f"{g.width()}x{g.height()}+{g.x()}+{g.y()}", "+repage", str(path)],
                   check=True)


def main(out: Path, width: int, height: int, dark: bool) -> int:
    home = Path(tempfile.mkdtemp(prefix="specchat-drafter-shots-"))
    os.environ["SPECCHAT_HOME"] = str(home / "app-data")
    os.environ["HF_HUB_CACHE"] = str(home / "hf-cache")
    from engine.fixtures.tiny_drafters import build_mtp_target
    from engine.fixtures.tiny_models import build_tiny_pair
    from engine.models.model_store import remember_model

    target, draft = build_tiny_pair(home / "models")
    mtp = build_mtp_target(home / "models", "hybrid")
    for model in (target, draft, mtp):
        remember_model(model)
    app = application(dark)
    from app.main_window import MainWindow

    window = MainWindow(open_picker_if_needed=False)
    window.move(0, 0)
    window.resize(width, height)
    window.show()
    window.session.load_pair(str(target), str(draft))
    pump(app, lambda: window.session.pair is not None, 120)
    suffix = ("" if (width, height) == (1600, 1000) else f"-{width}x{height}") + ("-dark" if dark else "")
    combo = window.toolbar.drafter.combo
    combo.showPopup()
    pump(app, seconds=1.0)
    screen_crop(window, out / f"drafter-choice{suffix}.png")
    combo.hidePopup()
    window.session.load_pair(str(mtp), "")
    pump(app, lambda: window.session.pair is not None and window.session.pair.target == str(mtp), 120)
    combo.showPopup()
    pump(app, seconds=1.0)
    screen_crop(window, out / f"drafter-choice-mtp{suffix}.png")
    combo.hidePopup()
    window.open_picker()
    picker = window.picker
    picker.move(0, 0)
    picker.resize(min(width, 1000), min(height, 560))
    picker.tabs.setCurrentIndex(1)
    tab = picker.on_disk
    row = next(i for i in range(tab.targets.count()) if tab.targets.item(i).data(0x0100) == str(mtp.resolve()))
    tab.targets.setCurrentRow(row)
    pump(app, lambda: "Checking" not in tab.draft_note.text(), 60)
    pump(app, seconds=0.5)
    picker.grab().save(str(out / f"picker-no-draft{suffix}.png"))
    picker.close()
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), dark=sys.argv[4:] == ["dark"]))
