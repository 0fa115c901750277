"""Quiet text is readable in light and dark mode, follows the system between them, and is the only dim text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

from app.quiet_text import make_quiet, quiet_colour

APP = Path(__file__).resolve().parents[2] / "app"


def luminance(colour: QColor) -> float:
    """WCAG's relative luminance."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in colour.getRgbF()[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: QColor, b: QColor) -> float:
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def dark_palette() -> QPalette:
    palette = QPalette(QApplication.palette())
    palette.setColor(QPalette.ColorRole.Window, QColor("#202020"))
    palette.setColor(QPalette.ColorRole.WindowText, QColor("#ffffff"))
    return palette


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_quiet_text_keeps_the_contrast_body_text_needs(qtbot, mode: str) -> None:
    """palette(mid), used before, gave 1.7:1 on Fusion's light window."""
    palette = QApplication.palette() if mode == "light" else dark_palette()
    window = palette.color(QPalette.ColorRole.Window)
    assert contrast(quiet_colour(palette), window) >= 4.5
    assert contrast(quiet_colour(palette), window) < contrast(palette.color(QPalette.ColorRole.WindowText), window)


def test_quiet_text_follows_its_window_into_dark_mode(qtbot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    label = make_quiet(QLabel("11.0 tok/s"), "font-size: 11px;")
    QVBoxLayout(window).addWidget(label)
    assert label.styleSheet() == f"color: {quiet_colour(window.palette()).name()}; font-size: 11px;"
    window.setPalette(dark_palette())
    assert label.styleSheet() == f"color: {quiet_colour(dark_palette()).name()}; font-size: 11px;"


def test_no_text_in_the_app_is_drawn_in_a_border_colour() -> None:
    drawn = [f"{path.name}: {match}" for path in sorted(APP.glob("*.py"))
             for match in re.findall(r"[^-]color:\s*palette\((?:mid|midlight|light|dark)\)", path.read_text())]
    assert drawn == []
