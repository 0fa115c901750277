"""A window's size on the screen it opens on: the size it is made for where the screen has room, else the screen's.

A dialog sized for a big screen (Compare's 980x600, the picker's 1000x560) ran off a 900x600 one's right and bottom
edges, with its buttons out of reach: a window manager does not shrink a window to fit.
"""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QWidget

TITLE_BAR_PX = 40  # what a window manager's title bar and frame take of the screen's height, with a margin


def fitted(preferred: QSize, available: QSize) -> QSize:
    """`preferred`, cut to the `available` room of a screen less its title bar."""
    return QSize(min(preferred.width(), available.width()), min(preferred.height(), available.height() - TITLE_BAR_PX))


def screen_room(widget: QWidget) -> QSize:
    """The room on the screen `widget` (a window, or the window it opens over) is on."""
    return widget.screen().availableGeometry().size()
