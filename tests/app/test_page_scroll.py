"""A scrolled page asks for its whole height (a QScrollArea asks for a few lines) and never scrolls sideways."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.page_scroll import PageScroll


def test_the_hint_is_the_whole_page_and_a_short_room_scrolls_down_only(qtbot) -> None:
    page = QWidget()
    layout = QVBoxLayout(page)
    for i in range(30):
        line = QLabel(f"line {i}: " + "words that wrap to the width of the page " * 3)
        line.setWordWrap(True)
        layout.addWidget(line)
    scroll = PageScroll(page)
    qtbot.addWidget(scroll)
    scroll.resize(300, 200)
    scroll.show()
    assert scroll.sizeHint().height() >= page.heightForWidth(scroll.viewport().width()) > 200
    qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() > 0)
    assert scroll.horizontalScrollBar().maximum() == 0 and page.width() <= scroll.viewport().width()
