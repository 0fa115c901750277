"""Images in the window: picked, dropped and pasted onto the message box as thumbnails; answered by a vision target,
their tokens one collapsed span in the question; kept through reopening, regenerating and editing; and a text-only
target that says it cannot see them instead of dropping them."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QGuiApplication, QImage
from PySide6.QtWidgets import QApplication, QFrame, QLabel

from app.image_attachments import UNSEEN, SentImages
from engine.chat_images import ChatImage
from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.params import GenerationParams
from tests.app.conftest import send_and_wait

NO_KEYS = Qt.KeyboardModifier.NoModifier
QUESTION = "What is in the image?"
MAX_TOKENS = 120  # long enough for the tiny model's answer to repeat itself, which lookup then copies


@pytest.fixture
def vision_window(make_window, vision_dir: Path):
    """A window over the tiny Qwen2.5-VL target, alone (speculation drafts by lookup)."""
    return make_window(pair=(str(vision_dir), ""), max_tokens=MAX_TOKENS)


def attach_images(qtbot, window, *paths: Path) -> None:
    with qtbot.waitSignal(window.attachments.reader.idle, timeout=30_000):
        window.attachments.attach_files(list(paths))


def thumbnails(widget) -> list[QFrame]:
    return [frame for frame in widget.findChildren(QFrame, "imageThumbnail") if frame.isVisibleTo(widget)]


def captions(widget) -> list[str]:
    return [frame.findChild(QLabel, "chipLabel").text() for frame in thumbnails(widget)]


def ask_with_images(qtbot, window, paths: list[Path], text: str = QUESTION):
    attach_images(qtbot, window, *paths)
    return send_and_wait(qtbot, window, text)


def test_images_picked_dropped_and_pasted_show_as_thumbnails_on_the_message_box(vision_window, qtbot,
                                                                               vision_images: list[Path],
                                                                               monkeypatch) -> None:
    window, bar = vision_window, vision_window.attachments
    monkeypatch.setattr("app.file_dialogs.QFileDialog.getOpenFileNames", lambda *args: ([str(vision_images[0])], ""))
    with qtbot.waitSignal(bar.reader.idle, timeout=30_000):
        bar.paperclip.click()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(vision_images[1]))])
    viewport = window.input.viewport()
    QApplication.sendEvent(viewport, QDragEnterEvent(QPoint(5, 5), Qt.DropAction.CopyAction, mime,
                                                     Qt.MouseButton.LeftButton, NO_KEYS))
    with qtbot.waitSignal(bar.reader.idle, timeout=30_000):
        QApplication.sendEvent(viewport, QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime,
                                                    Qt.MouseButton.LeftButton, NO_KEYS))
    QGuiApplication.clipboard().setImage(QImage(str(vision_images[0])))  # pixels, as a screenshot is copied
    window.input.setFocus()
    qtbot.keyClick(window.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert [a.name for a in bar.attached] == ["image-0.png", "image-1.png", "Pasted image.png"]
    assert all(isinstance(a, ChatImage) for a in bar.attached) and window.input.toPlainText() == ""
    assert captions(bar) == ["image-0.png · 100×80", "image-1.png · 64×112", "Pasted image.png · 100×80"]
    assert bar.unseen.isHidden() and not any(frame.property("unseen") for frame in thumbnails(bar))


def test_a_vision_target_answers_about_the_image_and_the_question_shows_its_tokens_as_one_span(
        vision_window, qtbot, vision_target, vision_images: list[Path]) -> None:
    """The answer is the engine's greedy answer about the same image (drafted by lookup, verified exactly); the
    question shows the thumbnail and "[image: 1 of 1, N tokens]", N as the target's prefill read it; the answer's
    rounds are shown and saved as for any answer: lookup copies the answer's own repetition, accepted tokens tinted."""
    window = vision_window
    result = ask_with_images(qtbot, window, [vision_images[0]])
    image_part = {"type": "image", "image": vision_images[0].read_bytes()}
    expected = generate([{"role": "user", "content": [image_part, {"type": "text", "text": QUESTION}]}],
                        ModelPair(vision_target), GenerationParams(mode="standard", temperature=0.0,
                                                                         max_tokens=MAX_TOKENS))
    assert result.tokens == expected.tokens and result.mode == "speculative"
    question, answer = window.session.store.messages(window.conversation_id)
    (image,) = question.images
    assert image.data == vision_images[0].read_bytes() and image.tokens > 0
    shown = window.chat.messages[0]
    assert captions(shown) == ["image-0.png · 100×80"]
    assert shown.body.toPlainText() == f"[image: 1 of 1, {image.tokens} tokens] \n{QUESTION}"
    assert {r["drafter"] for r in answer.trace} == {"lookup", "none"} and sum(r["accepted"] for r in answer.trace) > 0
    window.chat.messages[1].show_text(markdown=False)
    origins = {window.chat.messages[1].body.origin_at(f.position())[0] for f in window.chat.messages[1].body.token_fragments()}
    assert "accepted" in origins  # lookup's accepted tokens, tinted in the answer's token view


def test_a_chat_with_images_reopens_regenerates_and_edits_with_them(vision_window, qtbot,
                                                                    vision_images: list[Path]) -> None:
    window = vision_window
    first = ask_with_images(qtbot, window, vision_images)
    chat = window.conversation_id
    window.new_conversation()
    window.open_conversation(chat)
    question = window.chat.messages[0]
    tokens = [image.tokens for image in question.findChild(SentImages).images]
    assert captions(question) == ["image-0.png · 100×80", "image-1.png · 64×112"] and all(tokens)
    assert question.body.toPlainText().startswith(f"[image: 1 of 2, {tokens[0]} tokens] [image: 2 of 2, {tokens[1]} tokens]")
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000) as regenerated:
        window.chat.messages[-1].regenerate_button.click()
    assert regenerated.args[1].tokens == first.tokens  # greedy, and the images read again
    with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
        window.edit_message(window.chat.messages[0].message_id, "Describe the two images.")
    edited = window.session.store.messages(chat)[0]
    assert (edited.content, [i.data for i in edited.images]) == ("Describe the two images.",
                                                                 [p.read_bytes() for p in vision_images])
    assert captions(window.chat.messages[0]) == ["image-0.png · 100×80", "image-1.png · 64×112"]


def test_a_text_only_target_marks_the_image_and_says_it_cannot_see_it_instead_of_dropping_it(
        make_window, qtbot, vision_images: list[Path]) -> None:
    window = make_window()  # the tiny text pair
    attach_images(qtbot, window, vision_images[0])
    bar = window.attachments
    assert bar.unseen.text() == UNSEEN and bar.unseen.isVisibleTo(window)
    assert UNSEEN.startswith("This model cannot see images: load a vision model such as ")
    assert [frame.property("unseen") for frame in thumbnails(bar)] == [True]
    window.input.setPlainText(QUESTION)
    window.input.submitted.emit()
    assert "font-weight: bold" in bar.unseen.styleSheet() and window.error_banner.isHidden()
    assert window.input.toPlainText() == QUESTION and len(bar.attached) == 1 and window.conversation_id is None
    assert window.session.store.conversations() == [] and not window.session.busy
    bar.findChild(QFrame, "imageThumbnail").findChild(object, "removeAttachment").click()
    assert bar.attached == [] and bar.unseen.isHidden()
    send_and_wait(qtbot, window, QUESTION)  # without the image, the text goes


def test_loading_a_vision_model_takes_the_mark_off_and_the_image_goes(make_window, qtbot, vision_dir: Path,
                                                                      vision_images: list[Path]) -> None:
    window = make_window()
    attach_images(qtbot, window, vision_images[0])
    assert not window.attachments.unseen.isHidden()
    with qtbot.waitSignal(window.session.pair_loaded, timeout=60_000):
        window.session.load_pair(str(vision_dir), "")
    assert window.attachments.unseen.isHidden() and [f.property("unseen") for f in thumbnails(window.attachments)] == [False]
    send_and_wait(qtbot, window, QUESTION)
    assert [i.name for i in window.session.store.messages(window.conversation_id)[0].images] == ["image-0.png"]


def test_a_chat_with_images_continued_on_a_text_only_target_says_so_and_loses_nothing(make_window, qtbot,
                                                                                     vision_dir: Path, tiny_dirs,
                                                                                     vision_images: list[Path]) -> None:
    window = make_window(pair=(str(vision_dir), ""), max_tokens=8)
    first = ask_with_images(qtbot, window, [vision_images[0]])
    with qtbot.waitSignal(window.session.pair_loaded, timeout=60_000):
        window.session.load_pair(str(tiny_dirs[0]), str(tiny_dirs[1]))
    with qtbot.waitSignal(window.session.answer_failed, timeout=60_000):
        window.chat.messages[-1].regenerate_button.click()
    assert window.error_banner.text().startswith("tiny-target cannot see images; pick a vision model such as")
    question, answer = window.session.store.messages(window.conversation_id)
    assert [i.data for i in question.images] == [vision_images[0].read_bytes()] and answer.content == first.text
    assert captions(window.chat.messages[0]) == ["image-0.png · 100×80"]


def test_an_image_sent_without_words_is_a_question_titled_after_it(vision_window, qtbot, vision_images: list[Path]) -> None:
    """A person drops a picture and presses Enter: the target reads the image alone, and the chat is named after it."""
    result = ask_with_images(qtbot, vision_window, [vision_images[0]], text="")
    (question, answer) = vision_window.session.store.messages(vision_window.conversation_id)
    assert question.content == "" and [image.name for image in question.images] == ["image-0.png"]
    assert result.tokens and answer.content
    assert vision_window.session.store.title(vision_window.conversation_id) == "image-0.png"
