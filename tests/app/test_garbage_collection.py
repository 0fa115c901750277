"""Garbage holding Qt objects is collected on the GUI thread, never on a worker thread that happens to allocate."""

from __future__ import annotations

import gc
import threading
import weakref

from PySide6.QtCore import QObject

from app.garbage_collection import GuiThreadCollection


class Node:
    """A reference cycle holding a Qt object: only the cycle collector frees it."""

    def __init__(self) -> None:
        self.me = self
        self.widget_like = QObject()


def allocate_on_a_worker_thread() -> list[list[int]]:
    """Far more container allocations than the youngest generation's threshold, on another thread (kept, so the
    count of objects since the last collection stays past the threshold)."""
    kept: list[list[int]] = []
    worker = threading.Thread(target=lambda: kept.extend([i] for i in range(100_000)))
    worker.start()
    worker.join()
    return kept


def test_a_worker_thread_allocating_collects_no_qt_garbage(gui_thread_collection: GuiThreadCollection) -> None:
    """The automatic collector ran a worker's way into Qt destructors and froze the suite (a lock-order
    deadlock between Python's lock and Qt's): with collection on the GUI thread, the worker collects nothing."""
    cycle = weakref.ref(Node())
    allocated = allocate_on_a_worker_thread()
    assert cycle() is not None  # still there: no collection ran on the worker
    assert gc.get_count()[0] > gui_thread_collection.thresholds[0]  # the automatic collector would have run
    assert gui_thread_collection.collect_due() > 0  # the GUI thread's timer collects it instead
    assert cycle() is None
    del allocated


def test_stopping_gives_collection_back_to_python(qapp) -> None:
    gc.enable()  # as before the app starts (the suite's own collection turned it off)
    collection = GuiThreadCollection(qapp)
    assert not gc.isenabled()
    collection.stop()
    assert gc.isenabled()
