"""Images a user hands to a model: read with Pillow (PNG, JPEG, WebP...), whatever they came as.

A path, raw bytes or a `data:` URL becomes an RGB image; a file that is not an image, or not there, gets one
line saying which and what to do. Images are fingerprinted by their pixels, so a cache never takes one image's
tokens for another's (engine/decoding/image_prefill.py).
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import InvalidParameterError

ImageSource = str | Path | bytes | Any  # a path, encoded bytes, a data: URL, or a PIL image


def read_image(source: ImageSource) -> Any:
    """The image as an RGB PIL image, or a clear error naming what could not be read."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(source, Image.Image):
        return source.convert("RGB")
    name, data = _bytes_of(source)
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.convert("RGB")
    except (UnidentifiedImageError, OSError) as e:
        raise InvalidParameterError(f"{name} is not an image Pillow can read ({e}). Give a PNG, JPEG or WebP file.") from e


def _bytes_of(source: ImageSource) -> tuple[str, bytes]:
    if isinstance(source, bytes):
        return "The image", source
    text = str(source)
    if text.startswith("data:"):
        header, _, payload = text.partition(",")
        if ";base64" not in header:
            raise InvalidParameterError("An image data URL must be base64 (data:image/png;base64,...).")
        try:
            return "The image data URL", base64.b64decode(payload, validate=False)
        except ValueError as e:
            raise InvalidParameterError(f"The image data URL is not valid base64 ({e}).") from e
    path = Path(text).expanduser()
    try:
        return path.name, path.read_bytes()
    except OSError as e:
        raise InvalidParameterError(f"Cannot read the image {text} ({e.strerror}). Check the path.") from e


def fingerprint(images: Sequence[Any]) -> str:
    """A digest of the images' sizes and pixels, in order."""
    digest = hashlib.sha256()
    for image in images:
        digest.update(repr(image.size).encode())
        digest.update(image.tobytes())
    return digest.hexdigest()
