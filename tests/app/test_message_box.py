"""The box a message is typed in: Enter sends, Shift+Enter a new line, Tab moves on."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

from app.message_box import MessageBox
from app.message_widget import MessageWidget


def test_enter_sends_and_shift_enter_starts_a_line(qtbot) -> None:
    box = MessageBox("Message")
    qtbot.addWidget(box)
    qtbot.keyClicks(box, "one")
    qtbot.keyClick(box, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(box, "two")
    with qtbot.waitSignal(box.submitted, timeout=1000):
        qtbot.keyClick(box, Qt.Key.Key_Return)
    assert box.toPlainText() == "one\ntwo"


def test_tab_leaves_the_box_for_the_next_control(qtbot) -> None:
    """Tab typed a tab character: a keyboard user could not leave the box for Send."""
    window = QWidget()
    layout = QVBoxLayout(window)
    box, send = MessageBox("Message"), QPushButton("Send")
    layout.addWidget(box)
    layout.addWidget(send)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Tab)
    assert box.toPlainText() == "" and box.tabChangesFocus()


def test_enter_sends_an_edited_question_as_it_sends_a_new_one(qtbot) -> None:
    """The Edit box added a line on Enter; only a click on its Send sent it."""
    question = MessageWidget("user")
    qtbot.addWidget(question)
    question.set_text("Old question")
    question.start_editing()
    question.editor.setPlainText("New question")
    with qtbot.waitSignal(question.edit_submitted, timeout=1000) as sent:
        qtbot.keyClick(question.editor, Qt.Key.Key_Return)
    assert sent.args == ["New question"]
