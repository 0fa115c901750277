"""The window's menus: every command with its keys, where a person looks for them (on macOS, the menu bar at the
top of the screen).

The toolbar's actions (Models…, Speculative, Compare, Markdown, Settings…, Server…) are the same QAction objects
here, so a switch reads the same in both places and each shortcut belongs to one action. Qt maps Ctrl to Cmd on
macOS, and moves Settings… (Preferences) and Quit into the application menu there. Quit is spelled out because
`QKeySequence.Quit` is empty off macOS and the KDE/GNOME themes.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QMenuBar, QSplitter, QWidget

from .text_size import TextSize
from .toolbar import MainToolbar

SIDE_PANEL = 2  # the side panel's index among the window's columns
SIDE_PANEL_WIDTH = 300  # its width when shown again after it was shut with its width unknown


class MenuBar(QMenuBar):
    """File, Chat, View and Models, their actions kept as attributes for the window and tests.

    Args:
        toolbar: the toolbar whose actions the menus share.
        columns: the chat list, the chat and the side panel (View → Side Panel shuts and opens the last).
        text_size: the chat's text size (View → Larger Text, Smaller Text, Actual Size).
        new_chat, stop, quit: what File → New Chat, Chat → Stop and File → Quit do.
    """

    def __init__(self, toolbar: MainToolbar, columns: QSplitter, text_size: TextSize, *, new_chat: Callable[[], object],
                 stop: Callable[[], object], quit: Callable[[], object], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._columns = columns
        self._panel_width = SIDE_PANEL_WIDTH
        file = self.addMenu("&File")
        self.new_chat_action = _add(file, "New Chat", "Ctrl+N", new_chat)
        file.addSeparator()
        self.quit_action = _add(file, "Quit", "Ctrl+Q", quit)
        self.quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        chat = self.addMenu("&Chat")
        self.stop_action = _add(chat, "Stop Answer", "Esc", stop)
        chat.addAction(toolbar.compare_action)
        view = self.addMenu("&View")
        view.addAction(toolbar.markdown_action)
        self.side_panel_action = _add(view, "Side Panel", "Ctrl+Alt+S", self._show_side_panel)
        self.side_panel_action.setCheckable(True)
        self.side_panel_action.setChecked(self._side_panel_open())
        columns.splitterMoved.connect(lambda *_: self.side_panel_action.setChecked(self._side_panel_open()))
        view.addSeparator()
        self.larger_text_action = _add(view, "Larger Text", "Ctrl++", text_size.larger)
        self.larger_text_action.setShortcuts([QKeySequence("Ctrl++"), QKeySequence("Ctrl+=")])  # = is + unshifted
        self.smaller_text_action = _add(view, "Smaller Text", "Ctrl+-", text_size.smaller)
        self.actual_size_action = _add(view, "Actual Size", "Ctrl+0", text_size.reset)
        models = self.addMenu("&Models")
        toolbar.models_action.setShortcut(QKeySequence("Ctrl+K"))
        toolbar.settings_action.setShortcut(QKeySequence("Ctrl+,"))
        toolbar.settings_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        models.addActions([toolbar.models_action, toolbar.speculative_action])
        models.addSeparator()
        models.addActions([toolbar.server_action, toolbar.settings_action])

    def _side_panel_open(self) -> bool:
        return self._columns.sizes()[SIDE_PANEL] > 0

    def _show_side_panel(self, on: bool) -> None:
        """Open the side panel at the width it had, or shut it (the chat takes the room), as dragging it would."""
        sizes = self._columns.sizes()
        if on == (sizes[SIDE_PANEL] > 0):
            return
        if on:
            chat = self._columns.widget(1)
            give = max(min(self._panel_width, sizes[1] - (chat.minimumSizeHint().width() if chat else 0)), 0)
            sizes[1], sizes[SIDE_PANEL] = sizes[1] - give, give
        else:
            self._panel_width, sizes[1], sizes[SIDE_PANEL] = sizes[SIDE_PANEL], sizes[1] + sizes[SIDE_PANEL], 0
        self._columns.setSizes(sizes)
        self.side_panel_action.setChecked(self._side_panel_open())


def _add(menu: QMenu, text: str, keys: str, slot: Callable[..., object]) -> QAction:
    """A menu item with its keys, calling `slot` when chosen or pressed."""
    action = menu.addAction(text)
    action.setShortcut(QKeySequence(keys))
    action.triggered.connect(slot)
    return action
