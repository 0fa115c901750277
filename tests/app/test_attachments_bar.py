"""Attaching files in the window: the paperclip's files, drops and pastes onto the message box, chips before and after
sending, the refusal of a file too big for the model (with the numbers, or sent cut to fit), and lookup copying from
an attached file in an edit asked of a real model."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QGuiApplication
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox, QToolButton

from app.attachments_bar import AttachmentsBar
from engine.attachments import with_attachments
from engine.events import RoundEvent
from tests.app.conftest import send_and_wait

NO_KEYS = Qt.KeyboardModifier.NoModifier
CODE = "".join(f"def scale_{i}(value):\n    return value * {i}\n\n" for i in range(6))


def code_file(folder: Path, name: str = "scale.py", text: str = CODE) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def chip_texts(widget) -> list[str]:  # noqa: ANN001 - a QWidget
    return [label.text() for label in widget.findChildren(QLabel, "chipLabel") if label.isVisibleTo(widget)]


def file_mime(*paths: Path) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path)) for path in paths])
    return mime


def test_a_file_from_the_paperclip_shows_as_a_chip_with_its_size_and_tokens(make_window, tmp_path: Path, monkeypatch) -> None:
    window = make_window()
    bar: AttachmentsBar = window.attachments
    assert bar.isHidden() and bar.paperclip.isVisibleTo(window) and not bar.paperclip.icon().isNull()
    path = code_file(tmp_path)
    monkeypatch.setattr("app.attachments_bar.QFileDialog.getOpenFileNames", lambda *args: ([str(path)], ""))
    bar.paperclip.click()
    (attachment,) = bar.attached
    tokens = window.session.pair.count_tokens(attachment.block())
    assert attachment.tokens == tokens > 0 and not bar.isHidden()
    assert chip_texts(bar) == [f"scale.py · {len(CODE)} B · {tokens:,} tokens"]
    bar.findChild(QToolButton, "removeAttachment").click()
    assert bar.attached == [] and bar.isHidden()


def test_files_dropped_or_pasted_on_the_message_box_are_attached_and_text_is_still_text(make_window, qtbot,
                                                                                       tmp_path: Path) -> None:
    window = make_window()
    dropped, pasted = code_file(tmp_path, "dropped.py"), code_file(tmp_path, "pasted.csv", "a,b\n1,2\n")
    viewport = window.input.viewport()
    mime = file_mime(dropped)  # the events only point at it
    enter = QDragEnterEvent(QPoint(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, NO_KEYS)
    drop = QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, NO_KEYS)
    QApplication.sendEvent(viewport, enter)  # a drag enters the box first: Qt delivers a drop only where one did
    QApplication.sendEvent(viewport, drop)
    accepted = enter.isAccepted(), drop.isAccepted()
    assert accepted == (True, True) and [a.name for a in window.attachments.attached] == ["dropped.py"]
    QGuiApplication.clipboard().setMimeData(file_mime(pasted))
    window.input.setFocus()
    qtbot.keyClick(window.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert [a.name for a in window.attachments.attached] == ["dropped.py", "pasted.csv"]
    assert window.input.toPlainText() == ""
    QGuiApplication.clipboard().setText("just words")
    qtbot.keyClick(window.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert window.input.toPlainText() == "just words" and len(window.attachments.attached) == 2


def test_a_file_that_is_not_text_is_named_in_the_error_banner(make_window, tmp_path: Path) -> None:
    window = make_window()
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    window.attachments.attach_files([image])
    assert window.attachments.attached == [] and not window.error_banner.isHidden()
    assert window.error_banner.text().startswith("photo.png is not a text file (it holds binary data): attach text")


@pytest.mark.parametrize("send_cut", [False, True])
def test_a_file_too_big_for_the_model_is_refused_with_the_numbers_or_sent_cut_to_fit(make_window, qtbot, tmp_path: Path,
                                                                                     send_cut: bool) -> None:
    window = make_window(max_tokens=100)
    big = code_file(tmp_path, "big.py", "".join(f"row_{i} = {i} * {i}\n" for i in range(600)))
    window.attachments.attach_files([big])
    dialog = window.attachments.refusal
    assert isinstance(dialog, QMessageBox) and window.attachments.attached == []
    tokens = window.session.pair.count_tokens(big.name + "\n```py\n" + big.read_text().rstrip() + "\n```")
    room = 1024 - 100 - 64
    assert dialog.text() == (f"big.py is {tokens:,} tokens, but tiny-target reads at most 1,024: with 164 kept for the "
                             f"question and the answer there is room for {room:,}.")
    button = next(b for b in dialog.buttons() if b.text() == ("Send truncated" if send_cut else "Cancel"))
    button.click()
    if not send_cut:
        assert window.attachments.attached == [] and window.attachments.isHidden()
        return
    (cut,) = window.attachments.attached
    assert cut.cut_from == tokens and 0 < cut.tokens <= room and "cut to fit the model's context" in cut.text
    assert chip_texts(window.attachments)[0].endswith(f"{cut.tokens:,} tokens (cut from {tokens:,})")
    send_and_wait(qtbot, window, "Summarise it")  # fits: answered, not refused


def test_a_sent_question_keeps_its_files_shown_saved_and_read_by_the_model(make_window, qtbot, tmp_path: Path) -> None:
    window = make_window()
    window.attachments.attach_files([code_file(tmp_path)])
    (attachment,) = window.attachments.attached
    send_and_wait(qtbot, window, "Rename scale to grow")
    assert window.attachments.attached == [] and window.attachments.isHidden()
    question = window.chat.messages[0]
    assert question.text == "Rename scale to grow" and chip_texts(question) == [attachment.label()]
    (saved, _answer) = window.session.store.messages(window.conversation_id)
    assert saved.attachments == [attachment]
    assert window.session.history(window.conversation_id)[0]["content"] == with_attachments("Rename scale to grow",
                                                                                            [attachment])
    window.new_conversation()
    window.open_conversation(saved_conversation := window.session.store.conversations()[0].id)
    assert chip_texts(window.chat.messages[0]) == [attachment.label()]
    window.chat.messages[0].edit_submitted.emit("Rename scale to shrink")  # an edit keeps the question's files
    qtbot.waitUntil(lambda: not window.session.busy, timeout=60_000)
    assert window.session.store.messages(saved_conversation)[0].attachments == [attachment]


def test_a_question_too_long_with_its_files_comes_back_with_them(make_window, qtbot, tmp_path: Path) -> None:
    """The files fit on their own, but not beside a long question: both go back to the box, nothing is lost."""
    window = make_window()
    window.attachments.attach_files([code_file(tmp_path)])
    files = list(window.attachments.attached)
    with qtbot.waitSignal(window.session.prompt_rejected, timeout=30_000):
        window.input.setPlainText("word " * 1100)
        window.send()
    assert window.attachments.attached == files and window.input.toPlainText() == ("word " * 1100).strip()


@pytest.mark.real_weights
def test_lookup_copies_from_an_attached_file_when_a_real_model_edits_it(make_window, qtbot, tmp_path: Path,
                                                                         smollm_dir: Path) -> None:
    """SmolLM2 asked to edit an attached file writes it out again: lookup's accepted drafts are runs of the file."""
    window = make_window(pair=(str(smollm_dir), ""), drafter="lookup", history=False, max_tokens=120)
    window.attachments.attach_files([code_file(tmp_path)])
    (attachment,) = window.attachments.attached
    rounds: list[RoundEvent] = []
    window.session.answer_events.connect(lambda answer, events: rounds.extend(e for e in events if isinstance(e, RoundEvent)))
    result = send_and_wait(qtbot, window, "Rename the parameter value to x in every function. Reply with the whole file.",
                           timeout=600_000)  # a real model, on a machine that may be busy
    tokenizer_ids = window.session.engine.pair.tokenizer.encode
    in_file = tokenizer_ids(attachment.block(), add_special_tokens=False)
    copied = [r.draft[: r.accepted] for r in rounds if r.drafter == "lookup" and r.accepted >= 2]
    from_file = [run for run in copied if contains(in_file, list(run))]
    assert result.stats.accepted >= 20 and sum(map(len, from_file)) >= 0.8 * sum(map(len, copied))
    question = tokenizer_ids("Rename the parameter value to x in every function. Reply with the whole file.")
    assert not any(contains(question, list(run)) for run in from_file if len(run) >= 4)


def contains(tokens: list[int], run: list[int]) -> bool:
    return any(tokens[i : i + len(run)] == run for i in range(len(tokens) - len(run) + 1))
