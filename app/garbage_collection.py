"""Python's garbage collection, run on the GUI thread only.

The automatic collector runs on whichever thread happens to allocate when a threshold is crossed. When that is the
engine's worker thread and the garbage holds Qt objects (a closed window's widgets in a reference cycle), their
C++ destructors run on the worker: PySide takes a Qt lock there and then waits for Python's, while the GUI thread,
deleting widgets of its own, holds Python's lock and waits for Qt's. The app freezes for good (the suite caught it:
a worker importing a GGUF file collected a window a test had closed, while the GUI thread tore down another).

So automatic collection is switched off while the app runs, and a timer on the GUI thread collects instead,
generation by generation as the automatic collector would (the same thresholds), so memory is freed as before.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

CHECK_EVERY_MS = 500


class GuiThreadCollection(QObject):
    """Turns Python's automatic garbage collection off and collects on the GUI thread's timer instead.

    Create it on the GUI thread once the QApplication exists; `stop` gives collection back to Python.
    """

    def __init__(self, parent: QObject | None = None, check_every_ms: int = CHECK_EVERY_MS) -> None:
        super().__init__(parent)
        self.thresholds = gc.get_threshold()
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.collect_due)
        self._timer.start(check_every_ms)

    def collect_due(self) -> int:
        """Collect the oldest generation whose count passed its threshold (the younger ones with it), as the
        automatic collector would have by now; returns the objects freed."""
        counts = gc.get_count()
        for generation in (2, 1, 0):
            if counts[generation] > self.thresholds[generation]:
                return gc.collect(generation)
        return 0

    def stop(self) -> None:
        """Stop the timer and let Python collect automatically again (when the app's event loop is over)."""
        self._timer.stop()
        if self._was_enabled:
            gc.enable()
