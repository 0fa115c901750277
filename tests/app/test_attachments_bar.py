"""Attaching files in the window: the paperclip's files, drops and pastes onto the message box, chips before and after
sending, the refusal of a file too big for the model (with the numbers, or sent cut to fit), and lookup copying from
an attached file in an edit asked of a real model."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QGuiApplication
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox, QToolButton

from app.attachments_bar import AttachmentsBar
from engine.attachments import read_attachment, with_attachments
from engine.events import RoundEvent
from tests.app.conftest import send_and_wait

NO_KEYS = Qt.KeyboardModifier.NoModifier
CODE = """def area(width, height):
    return width * height


def perimeter(width, height):
    return 2 * (width + height)


def diagonal(width, height):
    return (width ** 2 + height ** 2) ** 0.5


def is_square(width, height):
    return width == height


def scaled(width, height, factor):
    return width * factor, height * factor
"""


def code_file(folder: Path, name: str = "shapes.py", text: str = CODE) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def attach(qtbot, bar: AttachmentsBar, *paths: Path) -> None:
    """Attach files and wait until the reader's thread has read them all."""
    with qtbot.waitSignal(bar.reader.idle, timeout=30_000):
        bar.attach_files(list(paths))


def chip_texts(widget) -> list[str]:
    return [label.text() for label in widget.findChildren(QLabel, "chipLabel") if label.isVisibleTo(widget)]


def file_mime(*paths: Path) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path)) for path in paths])
    return mime


def test_a_file_from_the_paperclip_shows_as_a_chip_with_its_size_and_tokens(make_window, qtbot, tmp_path: Path,
                                                                            monkeypatch) -> None:
    window = make_window()
    bar: AttachmentsBar = window.attachments
    assert bar.isHidden() and bar.paperclip.isVisibleTo(window) and not bar.paperclip.icon().isNull()
    path = code_file(tmp_path)
    monkeypatch.setattr("app.file_dialogs.QFileDialog.getOpenFileNames", lambda *args: ([str(path)], ""))
    with qtbot.waitSignal(bar.reader.idle, timeout=30_000):
        bar.paperclip.click()
    (attachment,) = bar.attached
    tokens = window.session.pair.count_tokens(attachment.block())
    assert attachment.tokens == tokens > 0 and not bar.isHidden()
    assert chip_texts(bar) == [f"shapes.py · {len(CODE)} B · {tokens:,} tokens"]
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
    with qtbot.waitSignal(window.attachments.reader.idle, timeout=30_000):
        QApplication.sendEvent(viewport, drop)
    accepted = enter.isAccepted(), drop.isAccepted()
    assert accepted == (True, True) and [a.name for a in window.attachments.attached] == ["dropped.py"]
    QGuiApplication.clipboard().setMimeData(file_mime(pasted))
    window.input.setFocus()
    with qtbot.waitSignal(window.attachments.reader.idle, timeout=30_000):
        qtbot.keyClick(window.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert [a.name for a in window.attachments.attached] == ["dropped.py", "pasted.csv"]
    assert window.input.toPlainText() == ""
    QGuiApplication.clipboard().setText("just words")
    qtbot.keyClick(window.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert window.input.toPlainText() == "just words" and len(window.attachments.attached) == 2


def test_a_file_that_cannot_be_read_is_named_in_the_error_banner(make_window, qtbot, tmp_path: Path) -> None:
    window = make_window()
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    attach(qtbot, window.attachments, image)
    assert window.attachments.attached == [] and not window.error_banner.isHidden()
    assert window.error_banner.text().startswith("photo.png cannot be read as an image: attach PNG, JPEG or WebP")


def test_files_being_read_are_named_over_the_box_until_they_are_read(make_window, qtbot, tmp_path: Path) -> None:
    """A 3.4 MB CSV read for 4 s with nothing on screen; then its dialog took the keys typed meanwhile."""
    window = make_window()
    first, second = code_file(tmp_path, "a.py", "x = 1\n"), code_file(tmp_path, "data.py", "y = 2\n")
    with qtbot.waitSignal(window.attachments.reader.idle, timeout=30_000):
        window.attachments.attach_files([first, second])
        assert window.attachments.reading.text() == "Reading a.py, data.py…" and window.attachments.reading.isVisibleTo(window)
    assert window.attachments.reading.isHidden() and len(window.attachments.attached) == 2


@pytest.mark.parametrize("send_cut", [False, True])
def test_a_file_too_big_for_the_model_is_refused_with_the_numbers_or_sent_cut_to_fit(make_window, qtbot, tmp_path: Path,
                                                                                     send_cut: bool) -> None:
    window = make_window(max_tokens=100)
    big = code_file(tmp_path, "big.py", "".join(f"row_{i} = {i} * {i}\n" for i in range(600)))
    attach(qtbot, window.attachments, big)
    dialog = window.attachments.refusal
    assert isinstance(dialog, QMessageBox) and window.attachments.attached == []
    tokens = window.session.pair.count_tokens(big.name + "\n```py\n" + big.read_text().rstrip() + "\n```")
    room = 1024 - 100 - 64
    assert dialog.text() == (f"big.py is {tokens:,} tokens, but tiny-target reads at most 1,024: with 164 kept for the "
                             f"question and the answer there is room for {room:,}.")
    assert dialog.defaultButton() is dialog.button(QMessageBox.StandardButton.Cancel)  # Enter attaches nothing
    button = next(b for b in dialog.buttons() if b.text() == ("Attach its beginning" if send_cut else "Cancel"))
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
    attach(qtbot, window.attachments, code_file(tmp_path))
    (attachment,) = window.attachments.attached
    send_and_wait(qtbot, window, "Rename area to surface")
    assert window.attachments.attached == [] and window.attachments.isHidden()
    question = window.chat.messages[0]
    assert question.text == "Rename area to surface" and chip_texts(question) == [attachment.label()]
    (saved, _answer) = window.session.store.messages(window.conversation_id)
    assert saved.attachments == [attachment]
    assert window.session.history(window.conversation_id)[0]["content"] == with_attachments("Rename area to surface",
                                                                                            [attachment])
    window.new_conversation()
    window.open_conversation(saved_conversation := window.session.store.conversations()[0].id)
    assert chip_texts(window.chat.messages[0]) == [attachment.label()]
    window.chat.messages[0].edit_submitted.emit("Rename area to size")  # an edit keeps the question's files
    qtbot.waitUntil(lambda: not window.session.busy, timeout=60_000)
    assert window.session.store.messages(saved_conversation)[0].attachments == [attachment]


def test_compare_runs_the_typed_question_with_the_files_attached_to_it(make_window, qtbot, tmp_path: Path) -> None:
    window = make_window()
    attach(qtbot, window.attachments, code_file(tmp_path))
    window.input.setPlainText("Rename area to surface")
    window.compare()
    assert window.compare_dialog.messages == [
        {"role": "user", "content": with_attachments("Rename area to surface", window.attachments.attached)}]
    assert window.attachments.attached != []  # still there for the message to send
    window.compare_dialog.close()


def test_a_message_sent_while_its_file_is_still_being_read_takes_the_file(make_window, qtbot, tmp_path: Path,
                                                                         monkeypatch) -> None:
    """Files are read off the GUI thread; Send waits for the reads under way rather than leave a file behind."""
    window = make_window()
    started, release = threading.Event(), threading.Event()

    def slow_read(path: Path, count_tokens):
        started.set()
        release.wait(30)
        return read_attachment(path, count_tokens)

    monkeypatch.setattr("app.attachment_reader.read_attachment", slow_read)
    window.attachments.attach_files([code_file(tmp_path)])
    assert started.wait(30) and window.attachments.attached == []
    release.set()  # the read ends on its thread; its result waits in the GUI thread's queue, not delivered yet
    send_and_wait(qtbot, window, "Rename area to surface")
    assert [a.name for a in window.session.store.messages(window.conversation_id)[0].attachments] == ["shapes.py"]


def test_several_refusals_are_asked_one_after_the_other_and_problems_shown_together(make_window, qtbot,
                                                                                    tmp_path: Path) -> None:
    window = make_window(max_tokens=100)
    rows = "".join(f"row_{i} = {i} * {i}\n" for i in range(600))
    first, second = code_file(tmp_path, "first.py", rows), code_file(tmp_path, "second.py", rows)
    (tmp_path / "a.bin").write_bytes(b"\x00\x01")
    attach(qtbot, window.attachments, first, tmp_path / "a.bin", second, tmp_path / "gone.txt")
    banner = window.error_banner.text()
    assert banner.startswith("a.bin is not a text file") and "Cannot read gone.txt" in banner
    assert window.attachments.refusal.text().startswith("first.py is ")
    next(b for b in window.attachments.refusal.buttons() if b.text() == "Attach its beginning").click()
    (cut,) = window.attachments.attached
    assert window.attachments.refusal.text().startswith("second.py is ")  # asked next, with the room now left
    assert f"beside the {cut.tokens:,} tokens already attached" in window.attachments.refusal.text()
    next(b for b in window.attachments.refusal.buttons() if b.text() == "Cancel").click()
    assert window.attachments.refusal is None and [a.name for a in window.attachments.attached] == ["first.py"]


def test_a_question_too_long_with_its_files_comes_back_with_them(make_window, qtbot, tmp_path: Path) -> None:
    """The files fit on their own, but not beside a long question: both go back to the box, nothing is lost."""
    window = make_window()
    attach(qtbot, window.attachments, code_file(tmp_path))
    files = list(window.attachments.attached)
    with qtbot.waitSignal(window.session.prompt_rejected, timeout=30_000):
        window.input.setPlainText("word " * 1100)
        window.send()
    assert window.attachments.attached == files and window.input.toPlainText() == ("word " * 1100).strip()


@pytest.mark.real_weights
def test_lookup_copies_from_an_attached_file_when_a_real_model_edits_it(make_window, qtbot, tmp_path: Path,
                                                                         smollm_dir: Path) -> None:
    """SmolLM2 asked to edit an attached file writes it out again, and lookup drafts it from the file: rounds whose
    accepted draft is a run found in the file, and at that round nowhere else (not in the question, not yet in the
    answer)."""
    # 64 tokens: on OpenBLAS the answer copied from the file at tokens 5, 27 and 57 (and 73 of 120 before)
    window = make_window(pair=None, history=False, num_draft=8, max_tokens=64)
    with qtbot.waitSignal(window.session.pair_loaded, timeout=600_000):  # a real model, on a machine that may be busy
        window.session.load_pair(str(smollm_dir), "")
    window.session.choose_drafter("lookup")
    attach(qtbot, window.attachments, code_file(tmp_path))
    (attachment,) = window.attachments.attached
    rounds: list[RoundEvent] = []
    window.session.answer_events.connect(lambda answer, events: rounds.extend(e for e in events if isinstance(e, RoundEvent)))
    question = "Add a docstring to every function. Reply with the whole file."
    result = send_and_wait(qtbot, window, question, timeout=600_000)
    encode = window.session.engine.pair.tokenizer.encode
    in_file, in_question = encode(attachment.block(), add_special_tokens=False), encode(question, add_special_tokens=False)
    from_file, answered = [], 0
    for r in rounds:
        run = list(r.draft[: r.accepted])
        if r.drafter == "lookup" and len(run) >= 4 and contains(in_file, run) and not contains(
                in_question + result.tokens[:answered], run):
            from_file.append(run)
        answered += r.emitted
    assert len(from_file) >= 2, f"lookup copied {from_file} from the file into {result.text!r}"


def contains(tokens: list[int], run: list[int]) -> bool:
    return any(tokens[i : i + len(run)] == run for i in range(len(tokens) - len(run) + 1))
