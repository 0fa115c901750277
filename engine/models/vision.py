"""Vision targets: models that see images, loaded with mlx-vlm.

mlx-vlm builds the whole model (vision tower, projector, language model) and its processor; the decoding loop
runs on the language model alone, through `LanguageView`, with the same caches and rewinds as any text model.
Only the prefill of a prompt that holds images reaches the vision tower (engine/decoding/image_prefill.py).

Qwen-VL models place tokens with multimodal rotary positions (mrope): an image's tokens share positions along
its rows and columns, so every text token after the images sits `delta` positions away from its index in the
cache. The cache that holds the images keeps that shift (`CachedModel.images`) and hands it to every pass;
mlx-vlm's language models keep it as hidden state that a rewind, a new chat or a shelved prefix would silently
reuse.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from ..errors import UnsupportedModelError

SEES_IMAGES = "sees images"  # how the model picker marks a vision target
# Shown to whoever hands an image to a model that reads only text.
SEEING_EXAMPLES = "mlx-community/Qwen2.5-VL-3B-Instruct-4bit or mlx-community/Qwen3-VL-4B-Instruct-4bit"


def is_vision_config(config: dict[str, Any]) -> bool:
    """Whether a model folder's config describes a model with a vision tower (mlx-vlm's families all name one)."""
    return isinstance(config.get("vision_config"), dict) and bool(config["vision_config"])


def sees_images(path: Path) -> bool:
    """Whether a model folder on disk has a vision tower, from its config alone (a GGUF file: no)."""
    import json

    try:
        return path.is_dir() and is_vision_config(json.loads((path / "config.json").read_text()))
    except (OSError, ValueError):
        return False


def cannot_see(name: str) -> str:
    """The one line said when an image is given to a text-only target."""
    return f"{name} cannot see images; pick a vision model such as {SEEING_EXAMPLES}."


ImageKey = tuple[int, str]  # where a prompt's images start, and their fingerprint (engine/images.py)


@dataclass(frozen=True)
class Shift:
    """The images a cache holds, and where its text stops following its indices: positions from `start` on are
    the index plus `delta`; `images` fingerprints the images (two images never share a cached prefix)."""

    start: int
    delta: int
    images: str

    @property
    def key(self) -> ImageKey:
        """What tells these images apart from others at the same place (the ids cannot: they are the same)."""
        return self.start, self.images


class LanguageView(nn.Module):
    """The language model of an mlx-vlm model as the decoding loop calls a model: ids in, logits out.

    A cache that holds images says so with each pass (`shift`: the `Shift` its `CachedModel` keeps), so the
    positions follow the cache's own images: a shelved prefix (engine/decoding/prompt_cache.py) carries them.
    """

    def __init__(self, vlm: nn.Module) -> None:
        super().__init__()
        self.language_model = vlm.language_model

    @property
    def layers(self) -> list[nn.Module]:
        return self.language_model.model.layers

    @property
    def args(self) -> Any:
        return getattr(self.language_model, "args", None)

    @property
    def uses_mrope(self) -> bool:
        return hasattr(self.language_model, "get_rope_index")

    def make_cache(self) -> list[Any]:
        make = getattr(self.language_model, "make_cache", None)
        if callable(make):
            return make()
        from mlx_lm.models.cache import KVCache

        return [KVCache() for _ in self.layers]

    def __call__(self, inputs: mx.array, cache: list[Any] | None = None, shift: Shift | None = None, **kwargs: Any) -> mx.array:
        if self.uses_mrope and "position_ids" not in kwargs:
            kwargs["position_ids"] = positions(_offset(cache), inputs.shape[-1], shift)
        return self.language_model(inputs, cache=cache, **kwargs).logits


def positions(offset: int, length: int, shift: Shift | None) -> mx.array:
    """mrope position ids (3, 1, length) of text tokens at cache offsets offset.. (shifted after the images)."""
    delta = shift.delta if shift is not None and offset >= shift.start else 0
    ids = mx.arange(offset + delta, offset + delta + length)[None]
    return mx.broadcast_to(ids[None], (3, 1, length))


def _offset(cache: list[Any] | None) -> int:
    if not cache:
        return 0
    offset = cache[0].offset
    return int(offset.item()) if isinstance(offset, mx.array) else int(offset)  # type: ignore[arg-type]  # an int offset


@dataclass
class Sight:
    """What a vision target sees with: mlx-vlm's whole model, its processor, and the id its images take."""

    model: nn.Module
    processor: Any
    image_token_id: int


def load_vision(spec: str, path: Path) -> tuple[LanguageView, Sight]:
    """The language model (as the loop calls it) and the sight of an mlx-vlm model folder."""
    from mlx_vlm.utils import load as vlm_load

    try:
        vlm, processor = vlm_load(str(path))
    except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise UnsupportedModelError(f"{spec} could not be loaded as a vision model ({e}). Update mlx-vlm, or pick another model.") from e
    image_token_id = getattr(vlm.config, "image_token_id", None) or getattr(vlm.config, "image_token_index", None)
    if image_token_id is None:
        raise UnsupportedModelError(f"{spec}'s config names no image token: SpecChat cannot place its images.")
    return LanguageView(vlm), Sight(vlm, processor, int(image_token_id))
