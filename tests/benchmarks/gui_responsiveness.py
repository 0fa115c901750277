"""How responsive the GUI thread stays while an answer streams (a benchmark, not a test).

A 5 ms QTimer runs on the GUI thread during generation; the gaps between its ticks show how long the event
loop was ever blocked. Tiny models are the hard case: they produce tokens fastest, so the most events. Rejected
drafts are shown as ghost text (the default), and `--tab` picks the side panel's tab in view while it streams
(Rounds: the live timeline; Live: the plots).

    QT_QPA_PLATFORM=offscreen .venv/bin/python -m tests.benchmarks.gui_responsiveness [TARGET DRAFT] [--tokens N]
        [--tab Live|Rounds|Positions|Cost] [--no-ghosts] [--no-adaptive]

`--no-adaptive` drafts K = 4 every round: the most ghost text and the busiest timeline (the adaptive policy
stops drafting on the random tiny pair, so its rounds are mostly plain).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("target", nargs="?")
    parser.add_argument("draft", nargs="?")
    parser.add_argument("--tokens", type=int, default=1500)
    parser.add_argument("--tab", default="Rounds", choices=["Live", "Rounds", "Positions", "Cost"])
    parser.add_argument("--no-ghosts", action="store_true", help="hide the rejected drafts")
    parser.add_argument("--no-adaptive", action="store_true", help="draft K = 4 every round")
    args = parser.parse_args()
    os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp(prefix="specchat-bench-")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from engine.fixtures.tiny_models import build_tiny_pair
    from engine.params import GenerationParams

    if args.target is None:
        target, draft = map(str, build_tiny_pair(Path(os.environ["SPECCHAT_HOME"]) / "models"))
    else:
        target, draft = args.target, args.draft or ""
    app = QApplication(sys.argv[:1])
    window = MainWindow(open_picker_if_needed=False)
    window.show()
    tabs = window.stats.tabs
    tabs.setCurrentIndex([tabs.tabText(i) for i in range(tabs.count())].index(args.tab))
    window.stats.legend.show_rejected.setChecked(not args.no_ghosts)
    window.session.load_pair(target, draft)
    while window.session.pair is None:
        app.processEvents()
        time.sleep(0.01)
    window.apply_settings(GenerationParams(temperature=0.0, top_p=1.0, max_tokens=args.tokens, num_draft=4,
                                        adaptive=not args.no_adaptive), "")

    ticks: list[float] = []
    batches: list[int] = []
    done: list[object] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    window.session.answer_events.connect(lambda answer, events: batches.append(len(events)))
    window.session.answer_finished.connect(lambda answer, result, summary: done.append(result))
    loop = QEventLoop()
    window.session.answer_finished.connect(loop.quit)
    timer.start()
    window.input.setPlainText("Tell me a long story.")
    window.send()
    loop.exec()  # the real event loop, as in the app
    timer.stop()
    gaps = sorted((b - a) * 1000 for a, b in zip(ticks, ticks[1:]))
    result = done[0]
    print(f"tab {args.tab}, rejected drafts {'hidden' if args.no_ghosts else 'shown'}, "
          f"{'fixed K' if args.no_adaptive else 'adaptive'}: {result.stats.rounds} rounds, {result.stats.drafted} drafted; "
          f"{result.stats.generated_tokens} tokens at {result.stats.generation_tps:.0f} tok/s in {len(batches)} batches "
          f"(median {statistics.median(batches):.0f} events per batch)")
    print(f"timer gaps (5 ms timer): median {statistics.median(gaps):.1f} ms, p99 {gaps[int(len(gaps) * 0.99)]:.1f} ms, "
          f"longest {gaps[-1]:.1f} ms over {len(gaps)} ticks")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
