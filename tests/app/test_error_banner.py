"""The error banner over the message box: it says what went wrong until the next message, or until clicked away."""

from __future__ import annotations

from PySide6.QtCore import Qt


def test_a_click_hides_an_error_but_not_the_notice_that_nothing_is_saved(make_window, qtbot) -> None:
    """"blob.bin is not a text file…" stood over the box through every later attach, dialog and server use."""
    window = make_window(pair=None)
    window.show()
    qtbot.waitExposed(window)
    window.show_error("blob.bin is not a text file: attach text, code or PDF.")
    qtbot.mouseClick(window.error_banner, Qt.MouseButton.LeftButton)
    assert window.error_banner.isHidden()
    window.session.store.degraded = "Conversations are not being saved: the disk refused a write."
    window.show_error("Another problem.")
    qtbot.mouseClick(window.error_banner, Qt.MouseButton.LeftButton)
    assert not window.error_banner.isHidden() and window.error_banner.text() == window.session.store.degraded
