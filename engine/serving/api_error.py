"""A request the server refuses, in the error shape OpenAI's clients parse, and the typed reading of body fields
that raises it. Every API's request parsing shares them (Anthropic's renders the same error in its own shape)."""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """A request the server refuses, as OpenAI reports it."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = status, message, kind, param, code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


class ContextLengthExceeded(ApiError):
    """A prompt longer than the model's context: OpenAI's code for it, and the counts for Anthropic's words."""

    def __init__(self, message: str, tokens: int, limit: int) -> None:
        super().__init__(400, message, param="messages", code="context_length_exceeded")
        self.tokens, self.limit = tokens, limit


def typed(body: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    """body[name] if it has the right JSON type (booleans are not numbers), the default if absent or null."""
    value = body.get(name)
    if value is None:
        return default
    numeric = kind in (int, float, (int, float))
    if not isinstance(value, kind) or (numeric and isinstance(value, bool)):
        wanted = {bool: "true or false", int: "a whole number", dict: "an object", str: "a string"}.get(kind, "a number")  # type: ignore[arg-type]  # a tuple of kinds is "a number"
        raise ApiError(400, f"'{name}' must be {wanted}, not {json.dumps(value)}.", param=name)
    return value


def completions_only(name: str, endpoint: str) -> None:
    """A 400 for a field of legacy completions (`echo`, `suffix`) sent to another endpoint."""
    if endpoint != "completions":
        raise ApiError(400, f"'{name}' is a field of completions (/v1/completions), not of chat completions.", param=name)
