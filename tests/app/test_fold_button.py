"""The fold header: its body hidden under a right arrow, shown under a down arrow once checked, and back."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.fold_button import FoldButton


def test_the_body_follows_the_button(qtbot) -> None:
    holder = QWidget()
    qtbot.addWidget(holder)
    body = QLabel("folded text")
    button = FoldButton(body, "Show or hide it")
    layout = QVBoxLayout(holder)
    layout.addWidget(button)
    layout.addWidget(body)
    holder.show()
    assert not body.isVisible() and button.arrowType() == Qt.ArrowType.RightArrow
    button.click()
    assert body.isVisible() and button.arrowType() == Qt.ArrowType.DownArrow
    button.click()
    assert not body.isVisible() and button.toolTip() == "Show or hide it"
