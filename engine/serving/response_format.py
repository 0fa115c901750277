"""Structured output on the wire: each API's way of asking for JSON, as the JSON Schema text the engine enforces.

Chat completions send `response_format` ({"type": "json_object"} or {"type": "json_schema", "json_schema": {"name",
"schema", "strict"}}), Responses `text.format` (the same, flattened: {"type": "json_schema", "name", "schema"}), and
Anthropic Messages `output_config.format` (or the older `output_format`: {"type": "json_schema", "schema"}). Any of them becomes
`GenerationParams.json_schema`, which `decoding/constraint.py` enforces on draft and target alike. A schema the
grammar library cannot compile is refused here, before the request is queued, with OpenAI's 400 for it.
"""

from __future__ import annotations

import json
from typing import Any

from .api_error import ApiError

ANY_OBJECT = '{"type": "object"}'


def chat_schema(body: dict[str, Any]) -> str | None:
    """The schema a chat completion's `response_format` asks for; None for free text."""
    form = body.get("response_format")
    if isinstance(form, dict) and form.get("type") == "json_schema":
        spec = form.get("json_schema")
        if not isinstance(spec, dict):
            raise ApiError(400, "response_format json_schema needs a 'json_schema' object: {name, schema, strict}.",
                           param="response_format.json_schema")
        return _checked(spec.get("schema"), spec.get("name"), "response_format")
    return _simple(form, "response_format")


def responses_schema(body: dict[str, Any]) -> str | None:
    """The schema a Responses request's `text.format` asks for; None for free text."""
    text = body.get("text")
    form = text.get("format") if isinstance(text, dict) else None
    if isinstance(form, dict) and form.get("type") == "json_schema":
        return _checked(form.get("schema"), form.get("name"), "text.format")
    return _simple(form, "text.format")


def anthropic_schema(body: dict[str, Any]) -> str | None:
    """The schema an Anthropic request asks for: `output_config.format` (today's SDKs, `messages.parse`, Claude
    Code's title request) or the older beta `output_format`; None for free text. The rest of `output_config`
    (`effort`) has nothing to act on here and is ignored."""
    config = body.get("output_config")
    form, param = body.get("output_format"), "output_format"
    if isinstance(config, dict) and config.get("format") is not None:
        form, param = config["format"], "output_config.format"
    if form is None:
        return None
    if not isinstance(form, dict) or form.get("type") != "json_schema":
        raise ApiError(400, f"{param} must be {{type: 'json_schema', schema: {{...}}}}.", param=param)
    return _checked(form.get("schema"), None, param)


def _simple(form: object, param: str) -> str | None:
    """The formats without a schema: text (None), or any JSON object."""
    if form is None or (isinstance(form, dict) and form.get("type") == "text"):
        return None
    if isinstance(form, dict) and form.get("type") == "json_object":
        return ANY_OBJECT
    raise ApiError(400, f"{param} must be {{type: 'text'}}, {{type: 'json_object'}} or {{type: 'json_schema', ...}}, "
                   f"not {json.dumps(form)}.", param=param)


def _checked(schema: object, name: object, param: str) -> str:
    """The schema's text, once the grammar library compiles it (an absent schema allows any JSON value)."""
    from ..decoding.constraint import schema_problem

    if schema is None:
        schema = {}
    if not isinstance(schema, dict):
        raise ApiError(400, f"Invalid schema for {param}: a JSON Schema is an object, not {json.dumps(schema)}.", param=param)
    text = json.dumps(schema, ensure_ascii=False)
    problem = schema_problem(text)
    if problem:
        named = f" '{name}'" if isinstance(name, str) and name else ""
        raise ApiError(400, f"Invalid schema for {param}{named}: {problem}. Fix the schema and send it again.", param=param)
    return text
