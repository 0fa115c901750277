"""The window's size and place and its columns' widths, kept from one launch to the next."""

from __future__ import annotations

from PySide6.QtCore import QSize

from app.screen_fit import fitted, screen_room
from app.window_layout import PREFERRED


def test_a_first_launch_opens_at_the_preferred_size_cut_to_the_screen(make_window) -> None:
    """A fixed 1280x800 ran off a small screen's edges (the offscreen test screen, 800x800, is one)."""
    window = make_window(pair=None)
    assert screen_room(window).width() < PREFERRED.width()
    assert window.size() == fitted(PREFERRED, screen_room(window))


def test_the_next_launch_opens_as_the_last_closed_with_the_side_panel_shut(make_window, qtbot) -> None:
    """Dragging the side panel shut on a small screen, or narrowing the chat list, lasts beyond the launch."""
    first = make_window(pair=None)
    first.show()
    qtbot.waitExposed(first)
    first.resize(QSize(700, 500))
    first.columns.setSizes([150, 550, 0])
    chosen = first.columns.sizes()
    assert chosen[2] == 0
    first.close()
    second = make_window(pair=None, keep_settings=True)
    second.show()
    qtbot.waitExposed(second)
    assert second.size() == QSize(700, 500)
    assert second.columns.sizes() == chosen
