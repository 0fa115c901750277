"""The tool calls shown inside the answers that made them: a card per call under the answer's text.

The cards are views of the calls as saved (engine/mcp_tools/saved_calls.py): a reopened chat shows them from the
store, and the running round (app/chat_tools.py) redraws its answer's cards each time a call changes, wiring
their verdict buttons to it. When an answer called tools its Markdown view shows its text without the calls
(the cards show them), while the coloured token view keeps every token the model wrote, calls included, with
how each was drafted; an answer that wrote nothing but calls shows its cards alone (its rounds stay in its
trace and the panel).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QBoxLayout
from shiboken6 import isValid

from engine.mcp_tools.saved_calls import AnswerCalls

from .chat_tools import ChatTools
from .chat_view import ChatView
from .message_widget import MessageWidget
from .tool_call_card import ToolCallCard


class ToolCards(QObject):
    """Puts the cards of each answer's calls into its message, and keeps the running round's up to date."""

    def __init__(self, tools: ChatTools, chat: ChatView, markdown: Callable[[], bool]) -> None:
        super().__init__(chat)
        self.tools, self.chat, self._markdown = tools, chat, markdown
        self._cards: dict[int, list[ToolCallCard]] = {}
        tools.calls_shown.connect(self._show_round)

    def show_saved(self, widget: MessageWidget, stored) -> None:  # stored: engine.conversations.StoredMessage
        """The calls of a saved answer, shown again (those of the running round still live)."""
        live = self.tools.live
        if stored.tool_calls:
            running = live if live is not None and stored.id == self.tools.message_id else None
            self.show(widget, stored.id, running or AnswerCalls.from_record(stored.tool_calls), -1)

    def show(self, widget: MessageWidget, message_id: int, calls: AnswerCalls, asking: int) -> None:
        """The calls' cards in the answer, added the first time, brought up to date after."""
        cards = self._cards.get(message_id, [])
        if not cards or not all(isValid(card) for card in cards) or cards[0].parent() is not widget:
            cards = self._cards[message_id] = [self._card(widget, message_id, index, calls) for index in range(len(calls.calls))]
            widget.text = calls.text  # copied and shown as Markdown without the calls: the cards show them
            widget.show_text(self._markdown())
            widget.body.setVisible(bool(calls.text))  # an answer that only called: its cards alone
        live = calls is self.tools.live
        for index, (card, record) in enumerate(zip(cards, calls.calls)):
            card.show_record(record, live, asking == index)

    def _card(self, widget: MessageWidget, message_id: int, index: int, calls: AnswerCalls) -> ToolCallCard:
        record = calls.calls[index]
        card = ToolCallCard(record.name, record.arguments, record.server, widget)
        card.decided.connect(lambda verdict, m=message_id, i=index: self.tools.decide(m, i, verdict))
        layout = widget.layout()
        assert isinstance(layout, QBoxLayout)  # a message's column: its body, then its cards
        layout.insertWidget(layout.indexOf(widget.body) + 1 + index, card)
        return card

    def _show_round(self, message_id: int, calls: AnswerCalls, asking: int) -> None:
        widget = next((w for w in self.chat.messages if w.message_id == message_id), None)
        if widget is not None:
            self.show(widget, message_id, calls, asking)
