"""The chat's text size: Ctrl with +, - and 0, for the messages and the message box, kept across launches."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from app.chat_column import ChatColumn
from app.text_size import SCALES
from tests.app.conftest import press


@pytest.fixture
def shown(make_window, qtbot):
    window = make_window(pair=None)
    window.show()
    qtbot.waitExposed(window)
    return window


def test_ctrl_plus_and_minus_size_the_messages_and_the_box_but_not_the_panel(shown) -> None:
    system = QApplication.font().pointSizeF()
    before = shown.chat.add_message("user", "A question")
    panel = shown.stats.font().pointSizeF()
    press(shown, "Ctrl++")
    press(shown, "Ctrl+=")  # the same key unshifted
    after = shown.chat.add_message("assistant", "An answer")
    larger = system * SCALES[SCALES.index(1.0) + 2]
    for widget in (before.body, before.speaker, after.body, shown.input):
        assert widget.font().pointSizeF() == pytest.approx(larger)
    assert shown.stats.font().pointSizeF() == panel
    press(shown, "Ctrl+-")
    assert after.body.font().pointSizeF() == pytest.approx(system * SCALES[SCALES.index(1.0) + 1])
    press(shown, "Ctrl+0")
    assert after.body.font().pointSizeF() == pytest.approx(system)


def test_the_size_stops_at_the_ends_and_is_kept_for_the_next_launch(shown, make_window, qtbot) -> None:
    text_size = shown.findChild(ChatColumn).text_size
    for _ in range(len(SCALES) + 2):
        text_size.larger()
    assert text_size.scale == SCALES[-1]
    shown.close()
    again = make_window(pair=None, keep_settings=True)
    assert again.findChild(ChatColumn).text_size.scale == SCALES[-1]
    assert again.input.font().pointSizeF() == pytest.approx(QApplication.font().pointSizeF() * SCALES[-1])
