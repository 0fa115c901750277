"""Turning a prompt or a conversation into the token ids a model reads.

Chat models are trained on their chat template; we render every turn with it (multi-turn included) and ask
for the assistant's turn to start. The target's tokenizer is the one that counts: the draft shares its ids.
"""

from __future__ import annotations

from typing import Any, Sequence

from .errors import PromptError

Message = dict[str, str]

# For a model without a chat template: a plain transcript it can continue.
_FALLBACK_ROLES = {"system": "System", "user": "User", "assistant": "Assistant"}


def conversation(prompt: str | Sequence[Message], system_prompt: str | None = None) -> list[Message]:
    """The messages to render: a system prompt if given, then the conversation or a single user turn."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    if system_prompt and not (messages and messages[0].get("role") == "system"):
        messages.insert(0, {"role": "system", "content": system_prompt})
    return messages


def check_not_empty(prompt: str | Sequence[Message]) -> None:
    if isinstance(prompt, str):
        empty = not prompt.strip()
    else:
        users = [m for m in prompt if m.get("role") == "user"]
        empty = not users or not str(users[-1].get("content", "")).strip()
    if empty:
        raise PromptError("The prompt is empty: type a message (or pass --prompt TEXT).")


def prompt_token_ids(
    tokenizer: Any, prompt: str | Sequence[Message], chat: bool = True, system_prompt: str | None = None
) -> list[int]:
    """Token ids for a prompt: chat-templated when `chat`, else the raw text (with BOS if the model wants it)."""
    check_not_empty(prompt)
    if not chat:
        text = prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)
        bos = getattr(tokenizer, "bos_token", None)
        return list(tokenizer.encode(text, add_special_tokens=bos is None or not text.startswith(bos)))
    messages = conversation(prompt, system_prompt)
    if getattr(tokenizer, "has_chat_template", False):
        return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True))
    transcript = "".join(f"{_FALLBACK_ROLES.get(m['role'], m['role'])}: {m['content']}\n" for m in messages)
    return list(tokenizer.encode(transcript + "Assistant:"))
