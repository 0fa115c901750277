"""Files attached to a message: read to text, counted in the target's tokens, and put into the prompt.

Text, code, Markdown, CSV and JSON are read as UTF-8; a PDF's text is extracted with pypdf. What the model reads is
the user message with each file before the question, as a fenced block under its name: every chat template
renders a user message's text, and a fence is how people (and so the models' training data) quote a file. Since
the file is then ordinary context, lookup drafting copies from it like from any prompt: an answer that edits an
attached file is mostly copied, which is where lookup is fastest.

The text is what is saved with the chat (never a path, which may move or change), and a file too big for the model
is refused with the numbers, or cut to fit when the user chooses so (`truncated`). Nothing here touches Qt or MLX:
the token count comes from a `count_tokens` function over the target's tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from .chat_images import IMAGE_SIGNATURES, IMAGE_SUFFIXES, ChatImage
from .code_fence import fence_for
from .errors import SpecChatError

CountTokens = Callable[[str], int]
KINDS = "text, code, Markdown, CSV, JSON or PDF files"
MAX_BYTES = 64 * 1024 * 1024  # past this no model's context holds the text; refused before reading it all
SNIFF_BYTES = 8192  # a NUL byte in the first 8 KB marks a binary file, as git and grep decide it
UNTAGGED = ("", ".txt", ".pdf")  # files whose fence gets no language (the suffix names it for the others: py, csv...)
QUESTION_ROOM = 64  # tokens kept for the question typed beside the files (a line or two)


class AttachmentError(SpecChatError):
    """A file that cannot be attached: unreadable, binary, not UTF-8, a PDF without text."""


class AttachmentTooLarge(AttachmentError):
    """Attachments that do not fit in the model's context.

    Attributes:
        attachment: the file that does not fit (with its token count).
        room: the tokens it may take (what the model reads, less the answer's room and the other attachments).
    """

    def __init__(self, message: str, attachment: Attachment, room: int) -> None:
        super().__init__(message)
        self.attachment = attachment
        self.room = room


@dataclass(frozen=True)
class Attachment:
    """A file's text as the chat keeps it.

    Attributes:
        name: the file's name (no folder: the chat keeps the text, not where it was).
        text: its text (a PDF's extracted text).
        size: the file's size in bytes.
        tokens: the tokens its block takes in the prompt, in the target's tokenizer (0: not counted).
        cut_from: when truncated to fit, the tokens of the whole file (0: the whole file is here).
    """

    name: str
    text: str
    size: int
    tokens: int = 0
    cut_from: int = 0

    def block(self) -> str:
        """The file as the model reads it: its name, then its text in a fence no line of it can close."""
        fence = fence_for(self.text)
        suffix = Path(self.name).suffix.lower()
        language = "" if suffix in UNTAGGED else suffix.lstrip(".")
        return f"{self.name}\n{fence}{language}\n{self.text.rstrip()}\n{fence}"

    def label(self) -> str:
        """What a chip shows: name, size and tokens, e.g. 'app.py · 4.1 KB · 1,024 tokens (cut from 9,000)'."""
        tokens = f" · {self.tokens:,} tokens" if self.tokens else ""
        cut = f" (cut from {self.cut_from:,})" if self.cut_from else ""
        return f"{self.name} · {size_label(self.size)}{tokens}{cut}"

    def record(self) -> dict[str, Any]:
        """As saved with the chat (JSON)."""
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Attachment:
        return cls(**{f.name: record[f.name] for f in fields(cls) if f.name in record})


Attached = Attachment | ChatImage  # what a message carries beside its text: files' texts and images


def attached_from_record(record: dict[str, Any]) -> Attached:
    """A saved file or image (records without a kind are files: chats saved before images)."""
    return ChatImage.from_record(record) if record.get("kind") == "image" else Attachment.from_record(record)


def size_label(size: int) -> str:
    """A file size for people: bytes, KB or MB."""
    if size < 1024:
        return f"{size} B"
    return f"{size / 1024:.1f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"


def token_counter(tokenizer: Any) -> CountTokens:
    """Counting tokens as the target reads them inside a message (no BOS: the template adds that once)."""
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False))


def read_attachment(path: Path, count_tokens: CountTokens | None = None) -> Attachment:
    """The file at `path` as an attachment, its tokens counted when `count_tokens` is given.

    Raises AttachmentError naming the problem and the fix: a missing or unreadable file, a binary one, text that
    is not UTF-8, an empty file, a PDF that is damaged, encrypted or holds no text (a scan)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise AttachmentError(f"{path.name} is a folder, not a file: attach the files in it one by one.")
        if size > MAX_BYTES:
            raise AttachmentError(f"{path.name} is {size_label(size)}, more than any model's context holds: attach a "
                                  f"smaller part of it (up to {size_label(MAX_BYTES)}).")
        data = path.read_bytes()
    except OSError as error:
        raise AttachmentError(f"Cannot read {path.name}: {error.strerror or error}. Check that the file exists and "
                              "that you may read it.") from error
    text = _pdf_text(path.name, data) if data.startswith(b"%PDF-") else _plain_text(path.name, data)
    if not text.strip():
        raise AttachmentError(f"{path.name} is empty: there is nothing in it to attach.")
    attachment = Attachment(path.name, text, size)
    return counted(attachment, count_tokens) if count_tokens else attachment


def counted(attachment: Attachment, count_tokens: CountTokens) -> Attachment:
    """The attachment with its block's tokens counted (another model's tokenizer counts differently)."""
    return replace(attachment, tokens=count_tokens(attachment.block()))


def _plain_text(name: str, data: bytes) -> str:
    if Path(name).suffix.lower() in IMAGE_SUFFIXES or data.startswith(IMAGE_SIGNATURES):
        raise AttachmentError(f"{name} is an image, and files are read as text: give it as an image (--image) to a "
                              "vision model, or describe the image in words.")
    if b"\x00" in data[:SNIFF_BYTES]:
        raise AttachmentError(f"{name} is not a text file (it holds binary data): attach {KINDS}, or save its "
                              "content as text first.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise AttachmentError(f"{name} is not UTF-8 text (byte {error.start} is not UTF-8): save it as UTF-8 and "
                              "attach it again.") from error


def _pdf_text(name: str, data: bytes) -> str:
    """A PDF's text, page by page (pypdf, pure Python: no system library to install)."""
    import io

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise AttachmentError(f"{name} is encrypted: open it with its password, save a copy without one, and "
                                  "attach that.")
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError) as error:
        raise AttachmentError(f"{name} cannot be read as a PDF ({error}): it may be damaged; export it again, or "
                              "attach its text.") from error
    text = "\n\n".join(page.strip() for page in pages if page.strip())
    if not text:
        raise AttachmentError(f"{name} has no text to read (a scanned PDF holds pictures of its pages): run text "
                              "recognition (OCR) on it first, or paste its text.")
    return text


def room(context_length: int, max_tokens: int) -> int:
    """The tokens a message's attachments may take: the model's context, less room for the answer (its token
    budget, at most half the context) and for the question itself (a line or two)."""
    return max(0, context_length - answer_room(context_length, max_tokens) - QUESTION_ROOM)


def answer_room(context_length: int, max_tokens: int) -> int:
    return min(max_tokens, context_length // 2)


def check_fits(attachment: Attachment, attached: Iterable[Attached], context_length: int, max_tokens: int,
               model: str) -> None:
    """Refuse `attachment` when beside those already `attached` it leaves the context no `room` for the question
    and the answer, with the numbers. The way out is each front end's to offer (the window asks whether to send it
    cut to fit; the CLI has --truncate-attachments)."""
    taken = sum(a.tokens for a in attached)
    left = max(0, room(context_length, max_tokens) - taken)
    if attachment.tokens <= left:
        return
    others = f", beside the {taken:,} tokens already attached," if taken else ""
    raise AttachmentTooLarge(
        f"{attachment.name} is {attachment.tokens:,} tokens, but {model} reads at most {context_length:,}: with "
        f"{answer_room(context_length, max_tokens) + QUESTION_ROOM:,} kept for the question and the answer{others} "
        f"there is room for {left:,}.", attachment, left,
    )


def truncated(attachment: Attachment, limit: int, count_tokens: CountTokens) -> Attachment:
    """The attachment cut at a line so that its block takes at most `limit` tokens, saying so at the cut (the
    model then knows the file goes on). The longest such start is found by bisection over its lines."""
    lines = attachment.text.splitlines(keepends=True)

    def cut(n: int) -> Attachment:
        note = f"\n[… cut to fit the model's context: {n} of {len(lines)} lines]"
        return replace(attachment, text="".join(lines[:n]).rstrip() + note, cut_from=attachment.tokens)

    low, high = 0, len(lines)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(cut(middle).block()) <= limit:
            low = middle
        else:
            high = middle - 1
    if low == 0:
        raise AttachmentError(f"Not even the first line of {attachment.name} fits in {limit:,} tokens: start a new "
                              "chat, or attach a smaller file.")
    return counted(cut(low), count_tokens)


def with_attachments(text: str, attachments: Iterable[Attached]) -> str:
    """A user message's text as the model reads it: each attached file's block, then what the user typed (its images
    go apart, as parts: `engine.chat_images.message_content`)."""
    blocks = [attachment.block() for attachment in attachments if isinstance(attachment, Attachment)]
    return "\n\n".join([*blocks, text]) if blocks else text
