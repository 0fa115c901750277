"""A prompt's images into a vision target's cache, before the decoding loop takes over.

Each image is a placeholder in the rendered prompt (the template's `<|image_pad|>`); the processor says how many
tokens the image becomes, and the placeholder is expanded to them, so the prompt's ids count every position the
cache will hold. The prefill then runs mlx-vlm's model once over the prompt: the vision tower's embeddings take
the image tokens' places and go through the language model into the target's cache. From there on the loop
(standard decoding, lookup, a draft model) runs on the language model alone (engine/models/vision.py).

A draft model and lookup read the same ids: to them an image is a run of image tokens, the same for every image,
which costs acceptance but never exactness, since the target verifies every token.

Two images render to the same ids, so the cache's images are fingerprinted (`CachedModel.images`): a prompt whose
images differ from the cached ones is prefilled again from its first image, and a shelved prefix is recalled past
its first image only for the same images (engine/decoding/prompt_cache.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mlx.core as mx

from ..errors import InvalidParameterError
from ..images import ImageSource, fingerprint, read_image
from ..models.loading import LoadedModel
from ..models.vision import ImageKey, LanguageView, Shift, Sight, cannot_see
from .cached_model import CachedModel
from .prompt_ids import Message


@dataclass
class ImagePrompt:
    """A prompt whose image placeholders are expanded, with what the vision tower reads."""

    ids: list[int]
    inputs: dict[str, Any]  # pixel_values and the processor's other image inputs (Qwen's image_grid_thw)
    digest: str
    first: int  # index of the first image token
    last: int  # index of the last image token
    counts: tuple[int, ...]  # the tokens each image became, in order

    @property
    def key(self) -> ImageKey:
        """Where the images start and what they are: what a cached prefix must hold to be reused past `first`."""
        return self.first, self.digest


def with_images(prompt: str | Sequence[Message], images: Sequence[ImageSource]) -> tuple[str | list[Message], list[ImageSource]]:
    """The prompt with `images` placed before the last user message's text, and every image it holds, in order.

    Images may also come inside messages, as OpenAI-style parts ({"type": "image", "image": source}); the
    template sees each as {"type": "image"}."""
    if not images and (isinstance(prompt, str) or not any(isinstance(m.get("content"), list) for m in prompt)):
        return (prompt if isinstance(prompt, str) else list(prompt)), []
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    if images:
        last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        messages[last]["content"] = [*({"type": "image", "image": s} for s in images), *_parts(messages[last]["content"])]
    sources: list[ImageSource] = []
    for message in messages:
        if isinstance(message.get("content"), list):
            sources += [part["image"] for part in message["content"] if part.get("type") == "image"]
            message["content"] = [{"type": "image"} if p.get("type") == "image" else p for p in message["content"]]
    return messages, sources


def _parts(content: Any) -> list[dict[str, Any]]:
    return list(content) if isinstance(content, list) else [{"type": "text", "text": str(content)}]


def image_prompt(target: LoadedModel, ids: list[int], sources: Sequence[ImageSource]) -> ImagePrompt:
    """Expand the placeholders of `ids` (one per image, in order) to each image's tokens."""
    if target.sight is None:
        raise InvalidParameterError(cannot_see(target.display_name))
    sight = target.sight
    images = [read_image(s) for s in sources]
    at = [i for i, t in enumerate(ids) if t == sight.image_token_id]
    if len(at) != len(images):
        raise InvalidParameterError(f"The prompt places {len(at)} images but {len(images)} were given.")
    expanded: list[int] = []
    counts: list[int] = []
    previous = 0
    for position, image in zip(at, images):
        tokens = _tokens_of(sight, image)
        expanded += ids[previous:position] + tokens
        counts.append(len(tokens))
        previous = position + 1
    expanded += ids[previous:]
    inputs = dict(sight.processor(text=[_token(sight) * len(images)], images=images, padding=False))
    inputs = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
    marks = [i for i, t in enumerate(expanded) if t == sight.image_token_id]
    return ImagePrompt(expanded, inputs, fingerprint(images), marks[0], marks[-1], tuple(counts))


def _token(sight: Sight) -> str:
    return str(getattr(sight.processor, "image_token", None) or sight.processor.tokenizer.convert_ids_to_tokens(sight.image_token_id))


def _tokens_of(sight: Sight, image: Any) -> list[int]:
    """The ids one image's placeholder becomes (the processor's expansion of it alone)."""
    out = sight.processor(text=[_token(sight)], images=[image], padding=False)
    return [int(t) for t in out["input_ids"][0].tolist()]


def prefill_images(target: LoadedModel, cache: CachedModel, prompt: ImagePrompt | None, ids: list[int]) -> None:
    """Put a prompt's images (and the text before and between them) into the target's cache.

    Nothing to do when the cache already holds these images (a later turn of the chat, or a prefix recalled from
    the shelf); otherwise the prompt is read again from its first image. A cache that holds other images forgets
    them (and their shift) when the rewind drops their positions."""
    if target.sight is None or prompt is None or not isinstance(cache.model, LanguageView):
        return
    view = cache.model
    shared = cache.shared_with(ids, prompt.key)
    if cache.images is None or cache.images.key != prompt.key:
        shared = min(shared, prompt.first)
    if shared > prompt.last:
        return
    cache.rewind_to(shared)
    start, end = len(cache.tokens), len(ids) - 1
    features = target.sight.model.get_input_embeddings(mx.array([ids[:end]]), **prompt.inputs)
    positions = getattr(features, "position_ids", None)
    kwargs = {"position_ids": positions[..., start:end]} if positions is not None else {}
    deltas = getattr(features, "rope_deltas", None)
    cache.images = Shift(prompt.first, int(deltas.reshape(-1)[0].item()) if deltas is not None else 0, prompt.digest)
    cache.feed(ids[start:end], lambda: view.language_model(mx.array([ids[start:end]]), inputs_embeds=features.inputs_embeds[:, start:end],
                                                            cache=cache.cache, **kwargs).logits[0])
