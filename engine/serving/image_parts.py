"""Images in API requests: OpenAI's `image_url` parts, Anthropic's `image` blocks, Responses' `input_image` parts.

Each becomes the engine's {"type": "image", "image": data URL} part beside the message's text parts
(engine/decoding/image_prefill.py), so a vision target sees it where the client put it; a text-only target
refuses the request with a 400 naming a model that sees (engine/models/vision.py). Images come inline, as base64
data: a server on a laptop does not fetch URLs on a client's behalf.
"""

from __future__ import annotations

from typing import Any

from .api_error import ApiError

IMAGE_PARTS = ("image_url", "image", "input_image")
INLINE_ONLY = "send the image inline as a base64 data URL (data:image/png;base64,...): the server fetches no URLs."


def is_image_part(part: object) -> bool:
    return isinstance(part, dict) and part.get("type") in IMAGE_PARTS


def image_part(part: dict[str, Any], where: str) -> dict[str, Any]:
    """The engine's image part for an API's image part (the shape its `type` names)."""
    kind = part["type"]
    if kind == "image":  # Anthropic: {"source": {"type": "base64", "media_type", "data"}}
        source: dict[str, Any] = part["source"] if isinstance(part.get("source"), dict) else {}
        if source.get("type") != "base64":
            raise ApiError(400, f"{where}.source: {INLINE_ONLY}", param=f"{where}.source")
        url: object = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    else:  # OpenAI: {"image_url": {"url"}} (or the url itself); Responses: {"image_url": "data:..."}
        value = part.get("image_url")
        url = str(value.get("url")) if isinstance(value, dict) else value
    if not isinstance(url, str) or not url.startswith("data:"):
        raise ApiError(400, f"{where}: {INLINE_ONLY}", param=where)
    return {"type": "image", "image": url}


def with_image_parts(content: list[Any], where: str, text_types: tuple[str, ...]) -> list[dict[str, Any]]:
    """A content list holding images as the engine's parts: text parts (of `text_types`) and images, in order."""
    parts = []
    for j, part in enumerate(content):
        if is_image_part(part):
            parts.append(image_part(part, f"{where}[{j}]"))
        elif isinstance(part, dict) and part.get("type") in text_types:
            parts.append({"type": "text", "text": str(part.get("text", ""))})
        else:
            raise ApiError(400, f"{where}[{j}] must be text or an image.", param=f"{where}[{j}]")
    return parts
