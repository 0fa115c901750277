"""The colours of speculation: what accepted, corrected and bonus tokens look like, in light and dark mode.

Origins are shown as background tints under the normal text colour, so text stays readable in either mode;
the tints are chosen per mode from the window's palette.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

ORIGIN_LABELS = {
    "accepted": "accepted draft",
    "corrected": "corrected by the target",
    "bonus": "bonus from the target",
    "target": "target (standard decoding)",
    "rejected": "rejected draft",
}
_LIGHT = {"accepted": "#cdeccf", "corrected": "#ffd9a8", "bonus": "#cfdcff"}
_DARK = {"accepted": "#1e5631", "corrected": "#6b4310", "bonus": "#283f73"}


def is_dark(palette: QPalette | None = None) -> bool:
    palette = palette or QApplication.palette()
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def origin_colour(origin: str, palette: QPalette | None = None) -> QColor | None:
    """The background tint for a token origin (None: no tint, for plain target tokens)."""
    colours = _DARK if is_dark(palette) else _LIGHT
    name = colours.get(origin)
    return QColor(name) if name else None


def ghost_colour(palette: QPalette | None = None) -> QColor:
    """Rejected draft text: dimmed, readable in either mode."""
    return QColor("#8c8c8c") if is_dark(palette) else QColor("#a0a0a0")


def round_mark_colour(palette: QPalette | None = None) -> QColor:
    """The faint dotted underline of alternate rounds."""
    return QColor("#5a5a5a") if is_dark(palette) else QColor("#b4b4b4")


def notice_colour(palette: QPalette | None = None) -> QColor:
    """A note under an answer that needs the reader (cut at the token limit, waiting for the server): amber."""
    return QColor("#e0a64a") if is_dark(palette) else QColor("#9a5600")
