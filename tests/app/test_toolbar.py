"""The toolbar at 900x600 (issue 32): every control in view, none behind "»"; the pair line cut with "…" and whole
on hover."""

from __future__ import annotations

LONG = "Qwen3-4B-Instruct-2507-MLX-4bit ← draft Qwen3-0.6B-MLX-4bit · speculative, draft model (SSD) · lenient"


def test_the_pair_line_stays_in_view_in_a_900_by_600_window(make_window, qtbot) -> None:
    window = make_window()
    window.show()
    label = window.toolbar.pair_label
    label.setText(LONG)
    window.resize(900, 600)
    qtbot.waitUntil(lambda: window.width() == 900)
    assert window.height() == 600  # the minimum size lets the window be that small
    qtbot.waitUntil(lambda: label.isVisible() and label.width() > 0)  # not behind the toolbar's "»"
    assert label.elided().endswith("…") and label.elided() != LONG and label.toolTip() == LONG
    window.resize(1600, 1000)
    qtbot.waitUntil(lambda: label.elided() == LONG)


def test_nothing_hides_behind_the_toolbars_overflow_in_a_900_by_600_window(make_window, qtbot) -> None:
    """Issue 32: at 900 px wide the pair line hid behind "»"; the Drafter choice joined the toolbar since."""
    window = make_window()
    window.show()
    window.resize(900, 600)
    qtbot.waitUntil(lambda: window.width() == 900)
    toolbar = window.toolbar
    for action in toolbar.actions():
        qtbot.waitUntil(lambda action=action: toolbar.widgetForAction(action).isVisible())
    assert toolbar.drafter.combo.isVisible() and toolbar.drafter.combo.currentText() == "Draft model"
