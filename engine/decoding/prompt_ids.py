"""Turning a prompt or a conversation into the token ids a model reads.

Chat models are trained on their chat template; we render every turn with it (multi-turn included) and ask
for the assistant's turn to start. The target's tokenizer is the one that counts: the draft shares its ids.

Earlier answers are spliced in as the token ids the model generated, not re-tokenized from their text: a
model often emits a string as other tokens than the tokenizer would choose, and re-tokenizing would make a
follow-up question diverge from the prompt cache in the middle of the last answer, so the whole answer and
everything after it would be processed again.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..errors import PromptError
from .reasoning import reads_reasoning_content

Message = dict[str, str]

# For a model without a chat template (a base model): a plain transcript it can continue, and where its answer
# ends: a base model goes on to write the next "User:" turn itself.
_FALLBACK_ROLES = {"system": "System", "user": "User", "assistant": "Assistant"}
FALLBACK_TURN_END = "\nUser:"


# The tokens chat templates open a turn with (ChatML, Llama 3, Gemma). A chat model that writes one has finished its
# answer and begun the next speaker's turn: Ollama and LM Studio stop such models there. Without it Qwen2.5-Coder-1.5B
# answering Codex once wrote `<|im_start|>` and a tool call after it, which Codex showed as the answer's text.
TURN_OPENERS = ("<|im_start|>", "<|start_header_id|>", "<start_of_turn>")


@lru_cache(maxsize=8)
def turn_openers(tokenizer: Any) -> frozenset[int]:
    """The ids of the turn-opening tokens the model's chat template writes, each one special token of its vocabulary:
    where a chat answer ends, beside end-of-sequence (none for a model without a template, whose fallback transcript
    ends at `FALLBACK_TURN_END`)."""
    template = getattr(tokenizer, "chat_template", None)  # a string, or a name for each of several
    template = " ".join(map(str, template.values())) if isinstance(template, dict) else template
    if is_base_model(tokenizer) or not isinstance(template, str):
        return frozenset()  # no template, or one written in Python (its tokens are not read here)
    added = tokenizer.get_added_vocab()
    return frozenset(added[token] for token in TURN_OPENERS if token in added and token in template)


def is_base_model(tokenizer: Any) -> bool:
    """Whether the model has no chat template: it continues text rather than answering turns."""
    return not getattr(tokenizer, "has_chat_template", False)


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
    tokenizer: Any,
    prompt: str | Sequence[Message],
    chat: bool = True,
    system_prompt: str | None = None,
    answers: dict[str, list[int]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    think: bool = True,
) -> list[int]:
    """Token ids for a prompt: chat-templated when `chat`, else the raw text (with BOS if the model wants it).

    `answers` maps the text of earlier answers to the ids that were generated for them. `tools` (OpenAI's
    function definitions) go to the chat template, which tells the model how to call them. `think` False renders the
    template's no-think prompt (`enable_thinking=False`); True leaves mlx-lm's default (think if the model can).
    Earlier answers' `reasoning_content` goes to a template that renders it, and is left out otherwise.
    """
    check_not_empty(prompt)
    if not chat:
        text = prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)
        bos = getattr(tokenizer, "bos_token", None)
        return list(tokenizer.encode(text, add_special_tokens=bos is None or not text.startswith(bos)))
    messages = conversation(prompt, system_prompt)
    if getattr(tokenizer, "has_chat_template", False):
        messages = for_template(tokenizer, messages)
        switch = ({} if think else {"enable_thinking": False}) | ({"tools": tools} if tools else {})
        messages, rendered = _rendered(tokenizer, messages, switch)
        spliced = [m["content"] for m in messages if m.get("role") == "assistant" and m.get("content") in (answers or {})]
        if not spliced and not continues_last_answer(messages):
            return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, **switch))
        return splice_answers(tokenizer, rendered, spliced, answers or {})
    head, so_far = answer_so_far(messages)
    transcript = "".join(f"{_FALLBACK_ROLES.get(m['role'], m['role'])}: {m['content']}\n" for m in head)
    return list(tokenizer.encode(transcript + "Assistant:" + (" " + so_far if so_far else "")))


def continues_last_answer(messages: Sequence[Message]) -> bool:
    """Whether the conversation ends in an assistant's text, which the answer then continues from its last character
    instead of opening a new turn after it: Anthropic's prefill (a reply held to start with "{"), an answer cut at
    its token limit carried on; llama.cpp's server reads a trailing assistant message the same way."""
    last = messages[-1] if messages else {}
    content = last.get("content")
    return last.get("role") == "assistant" and isinstance(content, str) and bool(content) and not last.get("tool_calls")


def answer_so_far(messages: Sequence[Message]) -> tuple[Sequence[Message], str]:
    """The conversation before the answer being written, and that answer's text so far ("" when a new one opens)."""
    if continues_last_answer(messages):
        return messages[:-1], str(messages[-1]["content"])
    return messages, ""


PROBE_TOOL = {"type": "function", "function": {"name": "probe", "description": "probe",
                                               "parameters": {"type": "object", "properties": {}}}}


@lru_cache(maxsize=8)
def template_reads_tools(tokenizer: Any) -> bool:
    """Whether the model's chat template shows tools to the model at all (renders a tool differently from none):
    a template that ignores them would drop a request's tools without a word."""
    if not getattr(tokenizer, "has_chat_template", False):
        return False
    probe = [{"role": "user", "content": "hi"}]
    try:
        bare = tokenizer.apply_chat_template(probe, add_generation_prompt=True, tokenize=False)
        return tokenizer.apply_chat_template(probe, add_generation_prompt=True, tokenize=False, tools=[PROBE_TOOL]) != bare
    except Exception:  # noqa: BLE001 - a template that fails on tools cannot show them
        return False


def for_template(tokenizer: Any, messages: list[Message]) -> list[Message]:
    """The messages as the template expects them: an answer's reasoning as `reasoning_content` if the template
    renders it (it decides which turns keep theirs), otherwise not at all (never re-sent as answer text)."""
    if reads_reasoning_content(tokenizer):
        return messages
    return [{key: value for key, value in m.items() if key != "reasoning_content"} for m in messages]


def _rendered(tokenizer: Any, messages: list[Message], switch: dict[str, Any]) -> tuple[list[Message], str]:
    """The messages the template renders, and its text. A system turn later in the conversation (an agent's
    reminder) stays where it stands if the template allows it there; a template that refuses one (many allow a
    system prompt only first) gets it merged into the leading system prompt instead."""
    try:
        return messages, _opened_answer(tokenizer, messages, switch)
    except Exception:
        merged = merged_system(messages)
        if merged == messages:
            raise
        return merged, _opened_answer(tokenizer, merged, switch)


def _opened_answer(tokenizer: Any, messages: list[Message], switch: dict[str, Any]) -> str:
    """The template's text up to where the answer is written: after the assistant turn's opening, and after the
    answer's text so far when the conversation ends in one (`continues_last_answer`)."""
    head, so_far = answer_so_far(messages)
    return tokenizer.apply_chat_template(list(head), add_generation_prompt=True, tokenize=False, **switch) + so_far


def merged_system(messages: list[Message]) -> list[Message]:
    """The conversation with every system message's text joined into one leading system prompt."""
    systems = [m["content"] for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    return [{"role": "system", "content": "\n\n".join(systems)}, *rest] if systems else rest


def splice_answers(tokenizer: Any, rendered: str, contents: list[str], answers: dict[str, list[int]]) -> list[int]:
    """Tokenize a rendered conversation, using the generated ids for each known answer found in it (in order)."""
    ids: list[int] = []
    position = 0
    for content in contents:
        at = rendered.find(content, position)
        if at < 0:  # the template changed the answer (stripped it, dropped a part): tokenize as text
            continue
        ids += tokenizer.encode(rendered[position:at], add_special_tokens=False)
        ids += answers[content]
        position = at + len(content)
    return ids + list(tokenizer.encode(rendered[position:], add_special_tokens=False))
