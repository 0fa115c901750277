"""Images attached to a chat message: read with Pillow, kept small, saved inside the chat.

A chat keeps its images' bytes (never a path, which may move): an image larger than `MAX_SIDE` on its long side is
downscaled first, which no vision model loses by (Qwen-VL's processors resize to about a megapixel anyway) and which
keeps the chat store small. PNG, JPEG and WebP files that are small enough are kept as they came; anything else
Pillow reads (HEIC where a Pillow plugin reads it, BMP, GIF...) is re-encoded: a JPEG as JPEG, the rest as PNG.

A message's images go to the model as OpenAI-style parts before its text (`message_content`), which
`engine/decoding/image_prefill.py` places where the chat template renders them. Nothing here touches Qt or MLX.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SpecChatError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic", ".heif", ".bmp", ".tif", ".tiff")
IMAGE_SIGNATURES = (b"\x89PNG", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")  # images under another name, too
IMAGE_KINDS = "PNG, JPEG or WebP images (HEIC where Pillow reads it)"
MAX_SIDE = 1024  # pixels on the long side kept in the chat
KEPT_FORMATS = ("PNG", "JPEG", "WEBP")  # saved as they came when small enough
MAX_IMAGE_BYTES = 64 * 1024 * 1024  # past this a file is no photo a model should read; refused before decoding it


class ImageError(SpecChatError):
    """An image that cannot be attached: unreadable, not an image, or a format this Pillow cannot decode."""


@dataclass(frozen=True)
class ChatImage:
    """An image as the chat keeps it.

    Attributes:
        name: the file's name ("Pasted image.png" for a paste).
        data: the encoded image (PNG, JPEG or WebP), downscaled to MAX_SIDE.
        width, height: its size in pixels, as kept.
        size: the size of the file given, in bytes.
        tokens: the tokens the target read it as (0: not read by a vision target yet).
    """

    name: str
    data: bytes
    width: int
    height: int
    size: int
    tokens: int = 0

    def record(self) -> dict[str, Any]:
        """As saved with the chat (JSON): the bytes in base64, marked as an image among the message's files."""
        return {"kind": "image", "name": self.name, "data": base64.b64encode(self.data).decode("ascii"),
                "width": self.width, "height": self.height, "size": self.size, "tokens": self.tokens}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ChatImage:
        return cls(record["name"], base64.b64decode(record["data"]), int(record["width"]), int(record["height"]),
                   int(record.get("size", 0)), int(record.get("tokens", 0)))

    def label(self) -> str:
        """What its thumbnail says: name and size in pixels, e.g. 'cat.png · 640×480'."""
        return f"{self.name} · {self.width}×{self.height}"


def image_span(index: int, count: int, tokens: int) -> str:
    """An image as the token view shows it, one collapsed span: '[image: 1 of 2, 64 tokens]' ('[image: 1 of 2]'
    until a vision target has read it)."""
    read = f", {tokens:,} tokens" if tokens else ""
    return f"[image: {index + 1} of {count}{read}]"


def is_image_file(path: Path) -> bool:
    """Whether a file is an image, by its name or its first bytes (a PNG saved as .txt is still a PNG)."""
    if Path(path).suffix.lower() in IMAGE_SUFFIXES:
        return True
    try:
        with open(path, "rb") as f:
            return f.read(8).startswith(IMAGE_SIGNATURES)
    except OSError:
        return False


def read_chat_image(source: Path | bytes, name: str = "Pasted image.png") -> ChatImage:
    """A file's (or pasted bytes') image as the chat keeps it.

    Raises ImageError naming the problem and the fix: a missing or unreadable file, one that is not an image, a
    format this Pillow cannot decode (HEIC without its plugin)."""
    if isinstance(source, Path | str):
        path = Path(source)
        name = path.name
        try:
            if path.stat().st_size > MAX_IMAGE_BYTES:
                raise ImageError(f"{name} is over 64 MB: attach a smaller copy of the image.")
            data = path.read_bytes()
        except OSError as error:
            raise ImageError(f"Cannot read {name}: {error.strerror or error}. Check that the file exists and that "
                             "you may read it.") from error
    else:
        data = source
    return _kept(name, data)


def _kept(name: str, data: bytes) -> ChatImage:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            kept = _encoded(image, data)
            width, height = Image.open(io.BytesIO(kept)).size
    except (UnidentifiedImageError, OSError, ValueError) as error:
        heic = Path(name).suffix.lower() in (".heic", ".heif")
        fix = ("this Pillow has no HEIC reader: export it as JPEG or PNG (or install pillow-heif)" if heic
               else f"attach {IMAGE_KINDS}")
        raise ImageError(f"{name} cannot be read as an image: {fix}.") from error
    return ChatImage(name, kept, width, height, len(data))


def _encoded(image: Any, data: bytes) -> bytes:
    """The bytes kept: the file itself when it is PNG, JPEG or WebP and small enough, else a downscaled copy."""
    if image.format in KEPT_FORMATS and max(image.size) <= MAX_SIDE:
        return data
    copy = image.copy()
    copy.thumbnail((MAX_SIDE, MAX_SIDE))
    out = io.BytesIO()
    if image.format == "JPEG":  # a photo stays a photo: JPEG again
        copy.convert("RGB").save(out, "JPEG", quality=90)
    else:  # lossless, transparency kept
        transparent = copy.mode in ("RGBA", "LA") or "transparency" in copy.info
        copy.convert("RGBA" if transparent else "RGB").save(out, "PNG", optimize=True)
    return out.getvalue()


def message_content(text: str, images: list[ChatImage]) -> str | list[dict[str, Any]]:
    """A user message's content as the engine reads it: its text, or its images (as parts) before its text."""
    if not images:
        return text
    return [*({"type": "image", "image": image.data} for image in images), {"type": "text", "text": text}]
