"""The window's menus: every command with its keys, the toolbar's switches shared, the side panel's switch."""

from __future__ import annotations

from tests.app.conftest import press


def test_the_menus_hold_every_command_and_the_toolbar_s_switches(make_window) -> None:
    """A Mac app's commands are in its menu bar; the toolbar's switches are the same actions, so both read alike."""
    window = make_window(pair=None)
    menus = {menu.title().replace("&", ""): [a.text() for a in menu.actions() if a.text()]
             for menu in (a.menu() for a in window.menuBar().actions())}
    assert menus == {"File": ["New Chat", "Quit"], "Chat": ["Stop Answer", "Compare"],
                     "View": ["Markdown", "Side Panel", "Larger Text", "Smaller Text", "Actual Size"],
                     "Models": ["Models…", "Speculative", "Server…", "Settings…"]}
    view = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    assert next(a for a in view.actions() if a.text() == "Markdown") is window.toolbar.markdown_action


def test_view_side_panel_shuts_and_opens_the_panel_at_its_width(make_window, qtbot) -> None:
    window = make_window(pair=None)
    window.resize(1200, 700)
    window.show()
    qtbot.waitExposed(window)
    window.columns.setSizes([200, 640, 360])
    press(window, "Ctrl+Alt+S")
    assert window.columns.sizes()[2] == 0 and not window.menuBar().side_panel_action.isChecked()
    press(window, "Ctrl+Alt+S")
    assert window.columns.sizes()[2] == 360 and window.menuBar().side_panel_action.isChecked()
    window.columns.setSizes([200, 1000, 0])  # dragged shut
    window.columns.splitterMoved.emit(1000, 2)
    assert not window.menuBar().side_panel_action.isChecked()
