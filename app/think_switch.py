"""The chat's Think switch, beside the message box: whether a thinking model thinks before it answers here.

Each chat keeps its own choice (saved with it); a chat that never chose follows the default in Settings. The
switch shows only while the loaded model thinks and its template can turn that off (`enable_thinking`).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QCheckBox, QWidget

from .session import ChatSession
from .worker import PairInfo


class ThinkSwitch(QCheckBox):
    """Think on or off for the chat shown.

    Args:
        session: where the choice is kept and read.
        shown_chat: the chat shown (None: a new chat, not saved until its first message).
    """

    def __init__(self, session: ChatSession, shown_chat: Callable[[], int | None], parent: QWidget | None = None) -> None:
        super().__init__("Think", parent)
        self.setObjectName("thinkSwitch")
        self.setToolTip("Let the model think before it answers in this chat (its reasoning is shown folded above "
                        "the answer). Off: it answers at once. The default for new chats is in Settings.")
        self.session = session
        self.shown_chat = shown_chat
        self.setVisible(False)
        session.pair_loaded.connect(self._pair_loaded)
        self.toggled.connect(self._toggled)

    def refresh(self) -> None:
        """Show the choice of the chat now shown (or the default)."""
        self.blockSignals(True)
        self.setChecked(self.session.think_for(self.shown_chat()))
        self.blockSignals(False)

    def _pair_loaded(self, info: PairInfo) -> None:
        self.setVisible(info.can_switch_thinking)
        self.refresh()

    def _toggled(self, on: bool) -> None:
        self.session.set_think(self.shown_chat(), on)
