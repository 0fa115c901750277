"""Images in the window: thumbnails on the message box and on sent questions, the note when the loaded target cannot
see them, and each image's tokens once the target has read it.

The message box's paperclip, drop and paste (`attachments_bar.py`) take images beside files; an image is read and
kept small by `engine.chat_images` (its bytes are saved with the chat) and shown as a thumbnail. A text-only target
never drops one silently: its thumbnails are marked and one line over the box says what to do, and Send refuses
until the image is removed or a vision model is loaded. A sent question shows its images as thumbnails, and its
text starts with one collapsed span per image, "[image: 1 of 2, 64 tokens]": the tokens the image became in the
target's prefill, which the answer after it was drafted and verified behind (`ImageTokens` saves the count).
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QBuffer, QIODevice, QMimeData, QObject, Qt
from PySide6.QtGui import QImage, QPixmap, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QTextBrowser, QToolButton, QVBoxLayout, QWidget

from engine.chat_images import ChatImage, image_span, read_chat_image
from engine.events import ImagesRead
from engine.models.vision import SEEING_EXAMPLES

from .flow_layout import FlowLayout
from .palette import ghost_colour, notice_colour

THUMBNAIL_SIDE = 72
IMAGE_PROPERTY = QTextFormat.Property.UserProperty + 5  # a collapsed image span: the image's index in its message
# One line over the message box: the first of the engine's examples (the server's refusal names them all).
UNSEEN = f"This model cannot see images: load a vision model such as {SEEING_EXAMPLES.partition(' or ')[0]}, or remove the image."
THUMBNAIL_STYLE = ("QFrame#imageThumbnail { border: %s; border-radius: 6px; background: palette(base); }"
                   " QLabel { font-size: 11px; }")


def pasted_image(mime: QMimeData) -> ChatImage | None:
    """An image pasted or dropped as pixels (a screenshot, an image copied from a browser), kept as PNG."""
    if not mime.hasImage():
        return None
    image = QImage(mime.imageData())
    if image.isNull():
        return None
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # PySide6 takes the format as str (its stubs say bytes)
    return read_chat_image(bytes(buffer.data().data()), "Pasted image.png")


def thumbnail(image: ChatImage, removable: bool = False) -> QFrame:
    """An image as a small framed picture with its name and size under it (✕ takes it off the message box)."""
    frame = QFrame()
    frame.setObjectName("imageThumbnail")
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(4, 4, 4, 2)
    layout.setSpacing(1)
    picture = QLabel()
    picture.setObjectName("thumbnailPicture")
    pixmap = QPixmap()
    pixmap.loadFromData(image.data)
    picture.setPixmap(pixmap.scaled(THUMBNAIL_SIDE, THUMBNAIL_SIDE, Qt.AspectRatioMode.KeepAspectRatio,
                                    Qt.TransformationMode.SmoothTransformation))
    picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
    layout.addWidget(picture)
    caption = QLabel(image.label())
    caption.setObjectName("chipLabel")
    row = QHBoxLayout()
    row.setContentsMargins(0, 0, 0, 0)
    row.addWidget(caption)
    layout.addLayout(row)
    frame.setToolTip(f"{image.label()} (kept in the chat)")
    if removable:  # beside the caption, never over the picture (where a light image hid it in dark mode)
        remove = QToolButton()
        remove.setText("✕")
        remove.setObjectName("removeAttachment")
        remove.setAutoRaise(True)
        remove.setToolTip(f"Take {image.name} off this message")
        row.addWidget(remove)
    mark_unseen(frame, False)
    return frame


def mark_unseen(frame: QWidget, unseen: bool) -> None:
    """Frame a thumbnail the loaded target cannot see in the notice colour, and say so on hover."""
    border = f"2px solid {notice_colour(frame.palette()).name()}" if unseen else "1px solid palette(mid)"
    frame.setStyleSheet(THUMBNAIL_STYLE % border)
    frame.setProperty("unseen", unseen)
    tip = frame.toolTip().split("\n")[0]
    frame.setToolTip(tip + ("\nThe loaded model cannot see this image." if unseen else ""))


def unseen_note(pair, images: list[ChatImage]) -> str:  # pair: worker.PairInfo | None
    """The line shown over the message box when images are attached and the loaded target reads only text."""
    return UNSEEN if images and pair is not None and not pair.sees_images else ""


class SentImages(QWidget):
    """A sent question's images: thumbnails under its header, and one collapsed span per image at the start of its
    text (`body`), which `set_tokens` fills in once the target has read them."""

    def __init__(self, images: list[ChatImage], body: QTextBrowser, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sentImages")
        self.images = images
        self.body = body
        layout = FlowLayout(self, spacing=4)
        for image in images:
            layout.addWidget(thumbnail(image))
        self._write_spans()

    def set_tokens(self, counts: list[int]) -> None:
        """The tokens each image became, in order: the spans say so."""
        self.images = [replace(image, tokens=count) for image, count in zip(self.images, counts)]
        self._write_spans()

    def spans(self) -> list[str]:
        """The spans as the body shows them."""
        return [image_span(i, len(self.images), image.tokens) for i, image in enumerate(self.images)]

    def _write_spans(self) -> None:
        """The spans, dimmed, as the body's first line (those written before replaced)."""
        cursor = QTextCursor(self.body.document())
        first = self.body.document().firstBlock()
        if _block_is_spans(first):
            cursor.setPosition(first.position())
            cursor.movePosition(QTextCursor.MoveOperation.NextBlock, QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
        cursor.movePosition(QTextCursor.MoveOperation.Start)
        fmt = QTextCharFormat()
        fmt.setForeground(ghost_colour(self.body.palette()))
        for index, span in enumerate(self.spans()):
            fmt.setProperty(IMAGE_PROPERTY, index)
            cursor.insertText(span + " ", fmt)
        cursor.insertBlock()


def _block_is_spans(block) -> bool:  # QTextBlock
    it = block.begin()
    return not it.atEnd() and it.fragment().charFormat().property(IMAGE_PROPERTY) is not None


class ImageTokens(QObject):
    """Saves how many tokens each of a question's images became, when the answer's stream says so, and shows it
    in the question's spans (the chat shows it again when reopened).

    Args:
        session: the chat session (its answers' events, its store).
        chat: the chat view whose questions show their images.
    """

    def __init__(self, session, chat, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.chat = chat
        session.answer_events.connect(self._on_events)

    def _on_events(self, answer, events: list[object]) -> None:  # StreamingAnswer
        read = next((event for event in events if isinstance(event, ImagesRead)), None)
        if read is None:  # every batch but the first of an answer about images
            return
        store = self.session.store
        question_id = store.parent_of(answer.message_id)
        question = next((m for m in store.messages(answer.conversation_id) if m.id == question_id), None)
        if question is None or not question.images:
            return
        counts = iter(read.tokens[-len(question.images):])
        attachments = [replace(a, tokens=next(counts)) if isinstance(a, ChatImage) else a for a in question.attachments]
        if attachments != question.attachments:
            store.set_attachments(question.id, attachments)
        shown = [image.data for image in question.images]
        for message in reversed(self.chat.messages):
            strip = message.findChild(SentImages)
            if strip is not None and [image.data for image in strip.images] == shown:
                strip.set_tokens(list(read.tokens[-len(shown):]))
                return
