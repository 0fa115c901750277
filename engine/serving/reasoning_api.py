"""Reasoning at the server's edge: whether a request lets the model think, in each API's words, and the reasoning
an earlier answer carried in the history.

A thinking model's template switches thinking on or off (`GenerationParams.think`); it has no "less". So:

- chat completions: `chat_template_kwargs: {"enable_thinking": false}` (vLLM's and SGLang's way), or OpenAI's
  `reasoning_effort: "none"`; any other effort (`minimal` included: OpenAI's minimal still reasons) leaves it on,
  and an explicit `enable_thinking` wins over the effort;
- Anthropic Messages: `thinking: {"type": "disabled"}`; `enabled` (its `budget_tokens` is checked, not enforced),
  `adaptive` and `between_tools` leave it on;
- Responses: `reasoning: {"effort": ...}`, read as chat completions' effort.

Absent, the server's default holds. Chat completions' reasoning is layered on `openai_api.parse_request` here
(`parse_openai`), so that module stays about OpenAI's plain fields. The answer's side (reasoning_content, thinking
blocks, reasoning items) is each API's renderer's.
"""

from __future__ import annotations

from typing import Any

from ..params import GenerationParams
from .openai_api import ApiError, ApiRequest, parse_request

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
ANTHROPIC_THINKING = ("enabled", "disabled", "adaptive", "between_tools")


def with_thinking(params: GenerationParams, think: bool | None) -> GenerationParams:
    """`params` with the request's thinking switch (None: as they are)."""
    return params if think is None else params.replace(think=think)


def effort_thinks(effort: object, param: str) -> bool | None:
    """An OpenAI reasoning effort as the switch: "none" is off, every other effort on, absent None."""
    if effort is None:
        return None
    if effort not in EFFORTS:
        raise ApiError(400, f"'{param}' must be one of {', '.join(EFFORTS)}, not {effort!r}.", param=param)
    return effort != "none"


def chat_thinks(body: dict[str, Any]) -> bool | None:
    """Chat completions: `chat_template_kwargs.enable_thinking`, else `reasoning_effort`."""
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ApiError(400, "'chat_template_kwargs' must be an object, e.g. {\"enable_thinking\": false}.",
                       param="chat_template_kwargs")
    enable = (kwargs or {}).get("enable_thinking")
    if enable is not None and not isinstance(enable, bool):
        raise ApiError(400, "'chat_template_kwargs.enable_thinking' must be true or false.",
                       param="chat_template_kwargs.enable_thinking")
    effort = effort_thinks(body.get("reasoning_effort"), "reasoning_effort")
    return enable if enable is not None else effort


def anthropic_thinks(body: dict[str, Any]) -> bool | None:
    """Anthropic's `thinking` config: {"type": "disabled"} is off, the other types on, absent None."""
    thinking = body.get("thinking")
    if thinking is None:
        return None
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind not in ANTHROPIC_THINKING:
        raise ApiError(400, "thinking: must be {type: 'enabled', budget_tokens}, {type: 'adaptive'} or "
                       "{type: 'disabled'}.", param="thinking")
    budget = thinking.get("budget_tokens")
    if kind == "enabled" and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
        raise ApiError(400, "thinking.budget_tokens: Field required (a whole number of tokens, e.g. 1024).",
                       param="thinking.budget_tokens")
    return kind != "disabled"


def responses_thinks(body: dict[str, Any]) -> bool | None:
    """Responses: `reasoning.effort`."""
    reasoning = body.get("reasoning")
    if reasoning is None:
        return None
    if not isinstance(reasoning, dict):
        raise ApiError(400, "'reasoning' must be an object, e.g. {\"effort\": \"none\"}.", param="reasoning")
    return effort_thinks(reasoning.get("effort"), "reasoning.effort")


def parse_openai(body: dict[str, Any], endpoint: str, models: list[str], defaults: GenerationParams) -> ApiRequest:
    """A chat completions or completions body as `openai_api.parse_request` reads it, with the thinking switch, and
    each earlier answer's reasoning kept as `reasoning_content` (the chat layer gives it to a template that renders
    it, and drops it for one that does not)."""
    request = parse_request(body, endpoint, models, defaults)
    request.params = with_thinking(request.params, chat_thinks(body))
    if endpoint == "chat" and isinstance(request.prompt, list):
        for i, (sent, message) in enumerate(zip(body["messages"], request.prompt)):
            if not isinstance(message, dict) or message["role"] != "assistant":  # a chat's list is messages, never ids
                continue
            reasoning = history_reasoning(sent, f"messages[{i}]")
            if reasoning is not None:
                message["reasoning_content"] = reasoning
    return request


def history_reasoning(message: dict[str, Any], where: str) -> str | None:
    """An earlier answer's reasoning as a chat message carries it: `reasoning_content` (LM Studio's, vLLM's older
    name), or `reasoning` (mlx-lm's, vLLM's newer); None if it has none."""
    text = message.get("reasoning_content", message.get("reasoning"))
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise ApiError(400, f"{where}.reasoning_content must be a string.", param=f"{where}.reasoning_content")
    return text
