"""The chat column of the main window: what an answer's lines say while it streams and when it ends, deleting with
Undo, and a narrow window."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from tests.app.conftest import send_and_wait


def test_at_900_by_600_the_chat_column_never_scrolls_sideways(make_window, qtbot) -> None:
    """The last answer's header (its branch arrows, Copy, Trace…, Regenerate, Delete) made the column wider than
    a 900-pixel window leaves it, once the vertical scroll bar took its share: the column scrolled sideways."""
    window = make_window(max_tokens=12, temperature=1.0)
    window.show()
    window.resize(900, 600)
    for question in ("First", "Second", "Third"):
        send_and_wait(qtbot, window, question)
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        window.chat.messages[-1].regenerate_button.click()
    qtbot.waitUntil(lambda: window.chat.verticalScrollBar().isVisible(), timeout=10_000)
    QCoreApplication.sendPostedEvents()  # the pending layouts
    QCoreApplication.processEvents()
    assert window.width() == 900 and window.chat.horizontalScrollBar().maximum() == 0
    viewport = window.chat.viewport()
    last = window.chat.messages[-1]
    assert last.branch_label.text() == "2/2" and not last.regenerate_button.isHidden()
    for button in (last.copy_button, last.trace_button, last.regenerate_button, last.delete_button):
        assert button.mapTo(viewport, button.rect().topRight()).x() < viewport.width()  # every action in sight
    window.centralWidget().setSizes([700, 10, 190])  # the splitter dragged as far as it goes
    QCoreApplication.sendPostedEvents()
    QCoreApplication.processEvents()
    assert window.chat.width() >= window.chat.widget().minimumSizeHint().width() + window.chat.verticalScrollBar().width()
    assert window.chat.horizontalScrollBar().maximum() == 0
