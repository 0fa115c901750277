"""Thinking models: telling the reasoning from the answer as the tokens come.

A thinking model writes its thoughts between markers before it answers. The markers are the ones mlx-lm's
`TokenizerWrapper` infers (`has_thinking`, `think_start_tokens`, `think_end_tokens`: `<think>`/`</think>` and the
like, single tokens or short sequences); gpt-oss, which mlx-lm does not know as thinking, writes its reasoning in
the harmony format's analysis channel and its answer in the final channel.

The split is made on token ids, before the text: each part then has its own detokenizer (a marker's text never
leaks into a neighbouring token's, as a streaming detokenizer that holds text back would let it), and a marker
made of several tokens is held back until it is complete or proves not to be one. The blank line a template puts
after a closing marker (and after an opening one) belongs to the marker, as Qwen3's template strips it from the
answers it renders again. Whether the output starts inside reasoning is read from the prompt: a template may open
the think block itself (Qwen3.5, DeepSeek-R1), and with thinking off a template closes an empty one there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..events import Origin, Part, TokenEvent

Ids = tuple[int, ...]
Payload = TypeVar("Payload")

HARMONY_TOKENS = ("<|start|>", "<|channel|>", "<|message|>", "<|end|>")


@dataclass(frozen=True)
class ThinkMarkers:
    """The token sequences around a model's reasoning.

    Attributes:
        opens: sequences that start reasoning.
        closes: sequences that end it.
        hidden: sequences in the answer that belong to neither part (gpt-oss's final channel header).
    """

    opens: tuple[Ids, ...]
    closes: tuple[Ids, ...]
    hidden: tuple[Ids, ...] = ()

    def opened_by(self, prompt_ids: list[int]) -> bool:
        """Whether the prompt leaves reasoning open: its last opening marker comes after its last closing one."""
        return _last_at(prompt_ids, self.opens) > _last_at(prompt_ids, self.closes)

    def after(self, part: Part) -> dict[Ids, Part]:
        """The sequences that may come while in `part`, and the part each one leads to."""
        if part == "reasoning":
            return {ids: "answer" for ids in self.closes}
        return {**{ids: "answer" for ids in self.hidden}, **{ids: "reasoning" for ids in self.opens}}


def _last_at(ids: list[int], sequences: tuple[Ids, ...]) -> int:
    """Where the last of any of `sequences` starts in `ids` (-1: nowhere)."""
    found = -1
    for sequence in sequences:
        for start in range(len(ids) - len(sequence), found, -1):
            if tuple(ids[start : start + len(sequence)]) == sequence:
                found = start
                break
    return found


def think_markers(tokenizer: Any) -> ThinkMarkers | None:
    """A tokenizer's think markers as mlx-lm infers them, or gpt-oss's channels; None for a model that does not think."""
    if getattr(tokenizer, "has_thinking", False):
        return ThinkMarkers((tuple(tokenizer.think_start_tokens),), (tuple(tokenizer.think_end_tokens),))
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    if all(token in vocab for token in HARMONY_TOKENS):
        def encode(text: str) -> Ids:
            return tuple(tokenizer.encode(text, add_special_tokens=False))

        return ThinkMarkers(
            opens=(encode("<|channel|>analysis<|message|>"),),
            closes=(encode("<|end|>"),),
            hidden=(encode("<|start|>assistant"), encode("<|channel|>final<|message|>")),
        )
    return None


def can_switch_thinking(tokenizer: Any) -> bool:
    """Whether the chat template reads `enable_thinking`, so that thinking can be switched off."""
    template = getattr(tokenizer, "chat_template", None)
    sources = template.values() if isinstance(template, dict) else [template]
    return any(isinstance(source, str) and "enable_thinking" in source for source in sources)


def reads_reasoning_content(tokenizer: Any) -> bool:
    """Whether the chat template renders an answer's `reasoning_content` (Qwen3's keeps it for the answers after
    the last question, and drops it before); a template that does not know it must not be given it."""
    template = getattr(tokenizer, "chat_template", None)
    sources = template.values() if isinstance(template, dict) else [template]
    return any(isinstance(source, str) and "reasoning_content" in source for source in sources)


class ReasoningSplitter(Generic[Payload]):
    """Decides the part of each generated token, in order, holding back the first tokens of a longer marker.

    Args:
        markers: the model's think markers.
        prompt_ids: the prompt, which may have opened the reasoning.
        is_blank: whether a token's text is whitespace only (a blank after a marker is the marker's).

    Attributes:
        part: the part the next token belongs to unless it is a marker.
    """

    def __init__(self, markers: ThinkMarkers, prompt_ids: list[int], is_blank: Callable[[int], bool]) -> None:
        self.markers = markers
        self.part: Part = "reasoning" if markers.opened_by(prompt_ids) else "answer"
        self.is_blank = is_blank
        self._held: list[tuple[int, Payload]] = []
        self._after_marker = True  # the start of the output counts as just after one (a template's "<think>\n")

    def push(self, token: int, payload: Payload) -> list[tuple[Payload, Part]]:
        """Take one token (and what goes with it); return those whose part is decided now, in order."""
        self._held.append((token, payload))
        decided: list[tuple[Payload, Part]] = []
        while self._held:
            held = tuple(token for token, _ in self._held)
            expected = self.markers.after(self.part)
            if held in expected:
                decided += [(payload, "marker") for _, payload in self._held]
                self._held, self.part, self._after_marker = [], expected[held], True
            elif any(len(ids) > len(held) and ids[: len(held)] == held for ids in expected):
                break  # maybe the start of a marker: wait for the next token
            else:
                decided.append(self._decide(*self._held.pop(0)))
        return decided

    def _decide(self, token: int, payload: Payload) -> tuple[Payload, Part]:
        """A token that is no marker: its part's, unless it is the blank line after a marker."""
        if self._after_marker and self.is_blank(token):
            return payload, "marker"
        self._after_marker = False
        return payload, self.part

    def flush(self) -> list[tuple[Payload, Part]]:
        """At the end: what was held for a marker that never completed belongs to the part it was in."""
        held, self._held = self._held, []
        return [self._decide(token, payload) for token, payload in held]


def untrimmed(detokenizer: Any) -> Any:
    """An mlx-lm streaming detokenizer that keeps the first text's leading space. mlx-lm's drop it (an answer then
    starts at its first word), right for a chat answer, wrong for a completion, which continues the prompt: " over"
    after "The opposite of up is" came back "over", with its token's logprob, and an evaluation harness scored a
    choice from nothing. SPM's has a switch; BPE's trims in a method of its own, replaced on this copy."""
    if hasattr(detokenizer, "trim_space"):
        detokenizer.trim_space = False
    if hasattr(detokenizer, "_maybe_trim_space"):
        detokenizer._maybe_trim_space = lambda text: text
    return detokenizer


class PartDetokenizer:
    """Generated tokens to token events, each part's text from its own detokenizer; a marker has no text.

    Without think markers every token is the answer's, as before thinking models were known.
    """

    def __init__(self, tokenizer: Any, markers: ThinkMarkers | None, prompt_ids: list[int], exact: bool = False) -> None:
        self.tokenizer = tokenizer
        self.splitter: ReasoningSplitter[tuple[int, Origin, int]] | None = (
            ReasoningSplitter(markers, prompt_ids, self._is_blank) if markers else None)
        made = (lambda: untrimmed(tokenizer.detokenizer)) if exact else (lambda: tokenizer.detokenizer)
        self.detokenizers = {"answer": made(), "reasoning": made()}

    @property
    def part(self) -> Part:
        """The part the next token belongs to unless it is a marker."""
        return self.splitter.part if self.splitter else "answer"

    def _is_blank(self, token: int) -> bool:
        return not self.tokenizer.decode([token]).strip()

    def push(self, token: int, origin: Origin, round_index: int) -> list[TokenEvent]:
        """One generated token; the events decided now (none while it may begin a longer marker)."""
        if self.splitter is None:
            return [self._event(token, origin, round_index, "answer")]
        return [self._event(*payload, part) for payload, part in self.splitter.push(token, (token, origin, round_index))]

    def flush(self) -> list[TokenEvent]:
        """At the end: the tokens held for a marker that never completed."""
        return [self._event(*payload, part) for payload, part in self.splitter.flush()] if self.splitter else []

    def rest(self) -> dict[str, str]:
        """At the end: what each part's detokenizer could only release then (a held space, an incomplete character)."""
        rests = {}
        for part, detokenizer in self.detokenizers.items():
            detokenizer.finalize()
            rests[part] = detokenizer.last_segment
        return rests

    def _event(self, token: int, origin: Origin, round_index: int, part: Part) -> TokenEvent:
        if part == "marker":
            return TokenEvent(token, "", origin, round_index, part)
        detokenizer = self.detokenizers[part]
        detokenizer.add_token(token)
        return TokenEvent(token, detokenizer.last_segment, origin, round_index, part)
