"""Files and images attached to the message being typed: the paperclip, drag and drop and paste onto the message
box, and chips (thumbnails for images: `image_attachments.py`).

Each file is read through `engine.attachments` (text, code, Markdown, CSV, JSON, PDF) off the GUI thread
(`attachment_reader.py`: a long PDF takes seconds), counted in the loaded target's tokens, and shown as a chip (name, size, tokens) with a ✕ to take it off. A file that cannot be attached
says why in the window's error banner; one too big for the context is refused with the numbers in a dialog that
offers to send it cut to fit. Sent messages show the same chips (`show_chips`), from the text the chat saved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, QObject
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QGuiApplication, QIcon, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QBoxLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QToolButton,
    QWidget,
)

from engine.attachments import KINDS, Attached, Attachment, AttachmentError, AttachmentTooLarge, check_fits, truncated, with_attachments
from engine.chat_images import IMAGE_KINDS, ChatImage
from engine.errors import SpecChatError
from engine.models.app_paths import RESOURCES

from .attachment_reader import AttachmentReader
from .file_dialogs import open_files
from .flow_layout import flow_row
from .image_attachments import SentImages, mark_unseen, pasted_image, thumbnail, unseen_note
from .palette import notice_colour
from .quiet_text import make_quiet

PAPERCLIP = RESOURCES / "paperclip.svg"
IMAGE_PATTERNS = "*.png *.jpg *.jpeg *.webp *.heic *.heif *.gif *.bmp"
TEXT_PATTERNS = "*.txt *.md *.py *.js *.ts *.json *.csv *.pdf *.c *.h *.cpp *.rs *.go *.java *.swift *.html *.css *.yaml *.yml *.toml *.sh *.sql"
# The first filter is the one the dialog opens on: every file either kind of model reads (it opened on images, and a
# text model's user saw none of their code or documents).
FILE_FILTER = (f"Text, code, documents and images ({TEXT_PATTERNS} {IMAGE_PATTERNS});;Text, code and documents ({TEXT_PATTERNS});;"
               f"Images ({IMAGE_PATTERNS});;All files (*)")
CHIP_STYLE = ("QFrame#attachmentChip { border: 1px solid palette(mid); border-radius: 9px; background: palette(base); }"
              " QLabel { font-size: 11px; }")


def chip(attachment: Attached, removable: bool = False) -> QFrame:
    """A file as a small rounded label: name, size and tokens, the full text's first lines as its tooltip (an image
    as its thumbnail)."""
    if isinstance(attachment, ChatImage):
        return thumbnail(attachment, removable)
    frame = QFrame()
    frame.setObjectName("attachmentChip")
    frame.setStyleSheet(CHIP_STYLE)
    layout = QHBoxLayout(frame)
    layout.setContentsMargins(8, 1, 4 if removable else 8, 1)
    icon = QLabel()
    icon.setPixmap(QIcon(str(PAPERCLIP)).pixmap(12, 12))
    label = QLabel(attachment.label())
    label.setObjectName("chipLabel")
    layout.addWidget(icon)
    layout.addWidget(label)
    frame.setToolTip("\n".join(attachment.text.splitlines()[:12]))
    if removable:
        remove = QToolButton()
        remove.setText("✕")
        remove.setObjectName("removeAttachment")
        remove.setAutoRaise(True)
        remove.setToolTip(f"Take {attachment.name} off this message")
        layout.addWidget(remove)
    return frame


def show_chips(message: QWidget, attachments: Iterable[Attached]) -> None:
    """Show a sent question's files under its header, its images over them (nothing for a message without any)."""
    attachments = list(attachments)
    chips: list[QWidget] = [chip(attachment) for attachment in attachments if isinstance(attachment, Attachment)]
    images = [attachment for attachment in attachments if isinstance(attachment, ChatImage)]
    layout = message.layout()
    if chips and isinstance(layout, QBoxLayout):
        layout.insertWidget(1, flow_row(chips))
    if images and isinstance(layout, QBoxLayout):
        layout.insertWidget(1, SentImages(images, message.body))  # type: ignore[attr-defined]  # a MessageWidget


def carries_attachments(mime: QMimeData) -> bool:
    """Whether a drop or a paste carries files, or an image as pixels (text alone is typed)."""
    return bool(local_files(mime)) or mime.hasImage()


def local_files(mime: QMimeData) -> list[Path]:
    """The local files a drop or a paste carries (none for text, images or remote links)."""
    return [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()] if mime.hasUrls() else []


class AttachmentsBar(QWidget):
    """The chips of the files and images attached to the message being typed (a row over the message box, hidden while
    there are none), the paperclip the window puts beside the box, and the note over the box when the loaded target
    cannot see the images attached (`unseen`).

    Args:
        session: the chat session (the loaded pair's tokenizer, context and the answer's token budget).
        message_box: the message box that takes drops and pastes of files.
        show_error: how the window shows what went wrong.

    Attributes:
        attached: the files attached so far.
        reader: reads the files given, off the GUI thread (`reader.idle`: all are read).
        refusal: the dialog open for a file too big for the context (None when none is).
    """

    def __init__(self, session, message_box: QPlainTextEdit, show_error: Callable[[str], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.show_error = show_error
        self.attached: list[Attached] = []
        self.refusal: QMessageBox | None = None
        self.waiting: list[Attachment] = []  # files read while the refusal dialog asks about another
        self.problems: list[str] = []  # why files could not be read, shown once the reader is idle
        self.reader = AttachmentReader(self)
        self.reader.read.connect(self._on_read)
        self.reader.failed.connect(self._on_failed)
        self.reader.idle.connect(self._show_problems)
        self.sent: tuple[str, tuple[Attached, ...]] = ("", ())  # the last question sent and its files
        self.paperclip = QToolButton()
        self.paperclip.setIcon(QIcon(str(PAPERCLIP)))
        self.paperclip.setObjectName("paperclip")
        self.paperclip.setToolTip(f"Attach files: {KINDS}, or {IMAGE_KINDS} (or drop them on the message box, or "
                                  "paste them)")
        self.paperclip.clicked.connect(self.choose_files)
        self.chips = QHBoxLayout(self)
        self.chips.setContentsMargins(0, 0, 0, 0)
        self.chips.addStretch()
        self.setVisible(False)
        self.unseen = QLabel()
        self.unseen.setObjectName("unseenImagesNote")
        self.unseen.setWordWrap(True)
        self.unseen.setVisible(False)
        self.reading = make_quiet(QLabel(), "")  # "Reading data.csv…" while the reader works: a big file takes seconds
        self.reading.setObjectName("readingFilesNote")
        self.reading.setVisible(False)
        session.pair_loaded.connect(self._mark_unseen)
        message_box.viewport().setAcceptDrops(True)
        message_box.viewport().installEventFilter(self)
        message_box.installEventFilter(self)
        session.prompt_rejected.connect(self._restore_rejected)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        """Files dropped on the message box, or pasted into it, are attached, and so are images as pixels (a
        screenshot); text goes on as text."""
        kind = event.type()
        if isinstance(event, QDragMoveEvent | QDragEnterEvent) and carries_attachments(event.mimeData()):
            event.acceptProposedAction()
            return True
        if isinstance(event, QDropEvent) and kind == QEvent.Type.Drop and carries_attachments(event.mimeData()):
            event.acceptProposedAction()
            self.attach_mime(event.mimeData())
            return True
        if kind == QEvent.Type.KeyPress and isinstance(event, QKeyEvent) and event.matches(QKeySequence.StandardKey.Paste):
            mime = QGuiApplication.clipboard().mimeData()
            if carries_attachments(mime):
                self.attach_mime(mime)
                return True
        return super().eventFilter(watched, event)

    def attach_mime(self, mime: QMimeData) -> None:
        """Attach what a drop or a paste carries: its local files, or else the image it holds as pixels."""
        files = local_files(mime)
        if files:
            self.attach_files(files)
            return
        try:
            image = pasted_image(mime)
        except SpecChatError as error:
            self.show_error(str(error))
            return
        if image is not None:
            self.add(image)

    def choose_files(self) -> None:
        """The paperclip: pick files in the system's dialog."""
        self.attach_files([Path(p) for p in open_files(self, "attachments", "Attach files", FILE_FILTER)])

    def attach_files(self, paths: list[Path]) -> None:
        """Read the files (on the reader's thread) and attach each: a file that cannot be read is named in the error
        banner once all are read, one too big for the context waits in the refusal dialog."""
        pair = self.session.pair
        if paths:
            self.reading.setText(f"Reading {', '.join(path.name for path in paths)}…")
            self.reading.setVisible(True)
        self.reader.start(paths, pair.count_tokens if pair is not None else None)

    def _on_read(self, attachment: Attachment) -> None:
        """Attach a file read, or refuse it when it leaves the context no room (counted with the loaded target).
        While the refusal dialog asks about a file, those read after it wait: each is checked beside those attached
        once it is answered."""
        if self.refusal is not None:
            self.waiting.append(attachment)
            return
        pair = self.session.pair
        try:
            if pair is not None and pair.count_tokens is not None and attachment.tokens:
                check_fits(attachment, self.attached, pair.context_length, self.session.params.max_tokens,
                           pair.target_name)
        except AttachmentTooLarge as too_big:
            self._refuse(too_big)
            return
        self.add(attachment)

    def _on_failed(self, message: str) -> None:
        self.problems.append(message)

    def _show_problems(self) -> None:
        """Every file is read: the reading line goes, and why some could not be read is said."""
        self.reading.setVisible(False)
        if self.problems:
            self.show_error(" ".join(self.problems))
            self.problems = []

    def add(self, attachment: Attached) -> None:
        """Show a file or image read already (a truncated one, one given back with a refused question) as attached."""
        self.attached.append(attachment)
        shown = chip(attachment, removable=True)
        remove = shown.findChild(QToolButton, "removeAttachment")
        assert remove is not None  # a removable chip has its button
        remove.clicked.connect(lambda: self._remove(attachment, shown))
        self.chips.insertWidget(self.chips.count() - 1, shown)
        self.setVisible(bool(self.attached))
        self._mark_unseen()

    def _chip_at(self, index: int) -> QWidget:
        item = self.chips.itemAt(index)
        shown = item.widget() if item is not None else None
        assert shown is not None  # one chip per attached file, in order
        return shown

    def _remove(self, attachment: Attached, shown: QWidget) -> None:
        self.attached.remove(attachment)
        self.chips.removeWidget(shown)
        shown.deleteLater()
        self.setVisible(bool(self.attached))
        self._mark_unseen()

    def _mark_unseen(self, *_: object, refused: bool = False) -> None:
        """Mark the images the loaded target cannot see, and say what to do in one line over the box (in bold when
        a Send was just refused for them)."""
        note = unseen_note(self.session.pair, self.images())
        for index in range(self.chips.count() - 1):
            shown = self._chip_at(index)
            if shown.objectName() == "imageThumbnail":
                mark_unseen(shown, bool(note))
        self.unseen.setText(note)
        self.unseen.setStyleSheet(f"color: {notice_colour(self.palette()).name()};" + (" font-weight: bold;" if refused else ""))
        self.unseen.setVisible(bool(note))

    def images(self) -> list[ChatImage]:
        return [attachment for attachment in self.attached if isinstance(attachment, ChatImage)]

    def refuses_unseen_images(self) -> bool:
        """Refuse to send images to a target that reads only text: the note over the box, which says what to do,
        turns bold (the error banner would say it twice). Nothing is dropped: the text and images stay."""
        self.reader.finish()
        self._mark_unseen(refused=True)
        return bool(self.unseen.text())

    def _refuse(self, too_big: AttachmentTooLarge) -> None:
        """The numbers, and the choice: send it cut to fit (its first lines), or not at all."""
        self.refusal = QMessageBox(QMessageBox.Icon.Warning, "File too big for the model", str(too_big),
                                   QMessageBox.StandardButton.Cancel, self)
        self.refusal.setInformativeText("Send its beginning, cut at a line to fit, or attach a smaller part of it.")
        cut = self.refusal.addButton("Attach its beginning", QMessageBox.ButtonRole.AcceptRole)
        self.refusal.setDefaultButton(QMessageBox.StandardButton.Cancel)  # Enter, typed for the message, attaches nothing
        self.refusal.buttonClicked.connect(lambda button: self._decided(too_big, button is cut))
        self.refusal.open()

    def _decided(self, too_big: AttachmentTooLarge, send_cut: bool) -> None:
        """Attach the file cut to fit, or not at all; then the files that waited, each checked anew."""
        self.refusal = None
        if send_cut:
            try:
                self.add(truncated(too_big.attachment, too_big.room, self.session.pair.count_tokens))
            except AttachmentError as error:
                self.show_error(str(error))
        waiting, self.waiting = self.waiting, []
        for attachment in waiting:
            self._on_read(attachment)

    def with_files(self, typed: str) -> str:
        """Typed text as the model would read it sent now, the files attached before it ("" when nothing is typed:
        Compare then runs the last question sent)."""
        self.reader.finish()
        return with_attachments(typed, self.attached) if typed else ""

    def take(self, shown_on: QWidget, text: str) -> tuple[Attached, ...]:
        """The files for the message being sent (`text`), shown as chips on it (`shown_on`); the bar is empty after it."""
        self.reader.finish()
        taken = tuple(self.attached)
        while self.attached:
            self._remove(self.attached[0], self._chip_at(0))
        show_chips(shown_on, taken)
        self.sent = (text, taken)
        return taken

    def _restore_rejected(self, _conversation_id: int, text: str, _message: str) -> None:
        """A question the model could not take (too long) comes back to the box with its files, to shorten."""
        sent_text, files = self.sent
        if text == sent_text and not self.attached:
            for attachment in files:
                self.add(attachment)
