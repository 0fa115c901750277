"""OpenAI completions' `suffix`: the text after the insertion point, as editors send it for autocomplete at the cursor.
The answer is the middle a code model fills in between the prompt and the suffix (`decoding/fill_in_middle.py`); a
model without fill-in-the-middle tokens refuses it with a 400 naming the models that have them."""

from __future__ import annotations

from typing import Any

from .api_error import ApiError, completions_only, typed


def suffix_requested(body: dict[str, Any], endpoint: str) -> str | None:
    """The request's suffix (None for none, or an empty one): completions only, and not with `echo`, whose prompt
    in front of the answer would be only half of what the middle sits in."""
    suffix = typed(body, "suffix", str, None)
    if not suffix:
        return None
    completions_only("suffix", endpoint)
    if body.get("echo"):
        raise ApiError(400, "'echo' and 'suffix' together are not supported: the middle is returned alone.", param="echo")
    return suffix
