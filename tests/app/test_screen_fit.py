"""A window's size on the screen it opens on."""

from __future__ import annotations

from PySide6.QtCore import QSize

from app.screen_fit import TITLE_BAR_PX, fitted


def test_a_window_keeps_its_size_where_the_screen_has_room() -> None:
    assert fitted(QSize(1000, 560), QSize(1600, 1000)) == QSize(1000, 560)


def test_on_a_small_screen_a_window_is_the_screen_less_its_title_bar() -> None:
    """The picker (1000x560) and Compare (980x600) ran off a 900x600 screen, their buttons out of reach."""
    assert fitted(QSize(1000, 560), QSize(900, 600)) == QSize(900, 560)
    assert fitted(QSize(980, 600), QSize(900, 600)) == QSize(900, 600 - TITLE_BAR_PX)
