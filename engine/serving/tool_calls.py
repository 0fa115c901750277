"""Tool calls, once for every API: the tools a request offers, its choice, and the calls found in the output.

Every API (chat completions, Anthropic Messages, Responses) turns its request's tools into OpenAI's function
definitions, the shape chat templates read, and its tool choice into a `ToolChoice`. The generation job then
renders the prompt with the tools the choice allows (`Tooling`), and splits the model's streamed text into
`TextPiece`s and `ToolCall`s (`OutputSplitter`) with what mlx-lm knows of the model's family: the tokenizer
wrapper's tool-call markers, matched on text by mlx-lm's own `TextStateMachine`, and its tool parser for what
lies between them: a family mlx-lm parses, we parse. The text outside the markers is searched for calls written
without them (`loose_calls`), naming only the tools offered.

`required` and a named function are enforced by constrained decoding (`tool_grammar`: the answer is held to a
call as JSON), and the prompt says what the choice allows (only the named tool goes to the template, and a
system line asks for a call). An answer the token limit cut comes back as the text it is; one that still lacks
the call (a runner that applies no grammar) ends the job with `ToolCallMissing`, a 500 naming what the model
wrote. Text is held back while such a call is still expected, so a stream never shows text that then turns into
an error.

A thinking model's reasoning never reaches the splitter: the engine tells it from the answer token by token
(engine/decoding/reasoning.py), and the job hands it on as `ReasoningPiece`s, so a call the model only thinks
about is not made.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..decoding.prompt_ids import template_reads_tools
from ..errors import InvalidParameterError
from ..events import GenerationResult
from .pieces import AnswerPiece, Piece, ReasoningPiece, TextPiece, ToolCall, new_call_id

Tool = dict[str, Any]  # {"type": "function", "function": {"name", "description", "parameters"}}
REQUIRED_CALL = "Answer by calling one or more of the tools above."
TOOL_CALLING_FAMILIES = "Qwen2.5, Qwen3, Llama 3.1 and later"  # models whose chat templates show tools


@dataclass(frozen=True)
class ToolChoice:
    """What the request allows: `auto` (text or calls), `none` (text only), `required` (a call) or `named`."""

    mode: Literal["auto", "none", "required", "named"] = "auto"
    name: str | None = None

    @property
    def requires_call(self) -> bool:
        return self.mode in ("required", "named")

    def describe(self) -> str:
        return f"a call to {self.name}" if self.mode == "named" else "a tool call"


@dataclass
class Reply:
    """An answer as the APIs render it: its reasoning, text and calls (from the pieces, in order) and the engine's
    result."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    result: GenerationResult | None = None
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str = ""

    def add(self, piece: AnswerPiece) -> None:
        if isinstance(piece, ToolCall):
            self.calls.append(piece)
        elif isinstance(piece, ReasoningPiece):
            self.reasoning += piece.text
        else:
            self.text += piece.text
            self.logprobs += piece.logprobs

    @property
    def finished(self) -> GenerationResult:
        assert self.result is not None, "the reply is rendered once the result arrived"
        return self.result


def function_tool(name: object, description: object = None, parameters: object = None) -> Tool:
    """A tool in OpenAI's function shape (what chat templates read), from any API's fields.

    Raises ValueError naming what is wrong."""
    if not isinstance(name, str) or not name:
        raise ValueError("needs a 'name' (a non-empty string)")
    if parameters is not None and not isinstance(parameters, dict):
        raise ValueError("has parameters that are not a JSON schema object")
    function: dict[str, Any] = {"name": name}
    if isinstance(description, str):
        function["description"] = description
    function["parameters"] = parameters or {"type": "object", "properties": {}}
    return {"type": "function", "function": function}


def history_call(call_id: object, name: object, arguments: object) -> dict[str, Any]:
    """An earlier call in the conversation, as chat templates read it (arguments as an object, not JSON text).

    Raises ValueError when the arguments are not a JSON object (or its text)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError as e:
            raise ValueError(f"has arguments that are not valid JSON ({e})") from e
    if not isinstance(arguments, dict):
        raise ValueError("has arguments that are not a JSON object")
    if not isinstance(name, str) or not name:
        raise ValueError("needs the function's 'name'")
    return {"id": str(call_id or ""), "type": "function", "function": {"name": name, "arguments": arguments}}


class LeftOut(ValueError):
    """An offered tool this server cannot run (a provider's built-in tool): left out of the prompt with a note
    (its message) rather than refusing a request that clients send with every turn."""


class ToolCallMissing(Exception):
    """The request required a call and the model answered without one (or called another function)."""

    def __init__(self, choice: ToolChoice, text: str, calls: list[ToolCall]) -> None:
        wrote = f"called {', '.join(c.name for c in calls)}" if calls else f"answered with text: {text[:80]!r}"
        super().__init__(f"tool_choice asked for {choice.describe()}, but the model {wrote}. Retry (at a temperature above "
                         "0 a retry differs), or send tool_choice 'auto' to accept an answer without it.")


@dataclass(frozen=True)
class Tooling:
    """A chat request's tools and tool choice, and what they mean for the prompt and the output."""

    tools: list[Tool]
    choice: ToolChoice = ToolChoice()
    left_out: tuple[str, ...] = ()  # notes on offered tools the server cannot run
    freeform: dict[str, str | None] = field(default_factory=dict)  # custom tools (Responses): name -> Lark or None
    one_call: bool = False  # at most one call an answer (OpenAI's parallel_tool_calls false, Anthropic's disable_parallel_tool_use)

    def template_tools(self) -> list[Tool] | None:
        """The tools the chat template shows the model: none for `none`, only the named one for `named`."""
        if self.choice.mode == "none" or not self.tools:
            return None
        if self.choice.mode == "named":
            return [t for t in self.tools if function_name(t) == self.choice.name]
        return self.tools

    def prompt(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The conversation, with a system line asking for a call when the choice requires one."""
        if not self.choice.requires_call:
            return messages
        line = f"Answer by calling the function {self.choice.name}." if self.choice.mode == "named" else REQUIRED_CALL
        if messages and messages[0].get("role") == "system":
            first = {**messages[0], "content": f"{messages[0].get('content') or ''}\n\n{line}".lstrip()}
            return [first, *messages[1:]]
        return [{"role": "system", "content": line}, *messages]

    def splitter(self, tokenizer: Any) -> OutputSplitter:
        """The splitter for this request's output, checking first that the model can call tools if it must."""
        if self.choice.requires_call and not getattr(tokenizer, "has_tool_calling", False):
            raise InvalidParameterError(
                f"tool_choice asks for {self.choice.describe()}, but this model's chat template has no tool-call syntax "
                "mlx-lm knows: send tool_choice 'auto' or 'none', or serve a model that calls tools."
            )
        active = bool(self.template_tools()) and getattr(tokenizer, "has_tool_calling", False)
        return OutputSplitter(tokenizer if active else None, self.tools, self.choice, self.one_call)


def unseen_tools_note(tooling: Tooling, tokenizer: Any) -> str | None:
    """A warning when the request offers tools the model's chat template has no place for (they would be dropped
    without a word), else None."""
    if not tooling.template_tools() or template_reads_tools(tokenizer):
        return None
    return ("tools left out: this model's chat template has no place for tools, so the model never sees them; serve "
            f"a model whose template calls tools ({TOOL_CALLING_FAMILIES})")


def function_name(tool: Tool) -> str:
    return str(tool.get("function", {}).get("name", ""))


def _transitions(tokenizer: Any) -> dict[str, list[tuple[str, str]]]:
    """mlx-lm's state machine edges for the tokenizer's tool-call markers (an end of None: calls run to the end)."""
    end = tokenizer.tool_call_end
    return {"normal": [(tokenizer.tool_call_start, "tool")], "tool": [(end, "normal")] if end else []}


class OutputSplitter:
    """Splits a streamed answer into text pieces and tool calls, as mlx-lm's server does.

    Pass `tokenizer=None` to split nothing (no tools offered, or a model without tool calling): every piece of
    text is a `TextPiece`, so the answer is exactly what the engine generated.
    """

    def __init__(self, tokenizer: Any | None, tools: list[Tool], choice: ToolChoice = ToolChoice(), one_call: bool = False) -> None:
        from mlx_lm.generate import TextStateMachine

        from .loose_calls import LooseCalls

        self._tokenizer, self._tools, self._choice, self._one_call = tokenizer, tools, choice, one_call
        self._machine = TextStateMachine(_transitions(tokenizer)) if tokenizer is not None else None
        names = {function_name(t) for t in tools if choice.mode != "named" or function_name(t) == choice.name}
        self._loose = LooseCalls(names) if tokenizer is not None else None
        self._state = self._machine.make_state("normal") if self._machine else None
        self._tool_text = ""
        self._held: list[Piece] = []
        self._blank: list[Piece] = []  # whitespace since the last text, until what follows says what it is
        self.fed = ""  # all the text fed so far
        self.text = ""
        self.calls: list[ToolCall] = []

    def feed(self, text: str) -> list[Piece]:
        """The pieces that `text` (the next streamed text) completes."""
        from mlx_lm.generate import TextStateMachine

        self.fed += text
        if self._machine is None:
            return self._release([TextPiece(text)] if text else [])
        self._state, segments = TextStateMachine.split(self._state, text)
        return self._release(self._laid_out(self._pieces(segments)))

    def finish(self, cut: bool = False) -> list[Piece]:
        """The last pieces, once generation ended: held text, and a call cut short (as text if it does not parse).

        Raises ToolCallMissing when the choice required a call the model did not make, unless the token limit
        `cut` the answer: then what it wrote comes back as text with the finish reason that says so."""
        from mlx_lm.generate import TextStateMachine

        pieces: list[Piece] = []
        if self._machine is not None:
            self._state, rest, state = TextStateMachine.flush(self._state)
            pieces = self._pieces([(state, rest)]) + self._end_call(closed=False)
            pieces += self._loose.finish() if self._loose else []
            pieces = self._laid_out(pieces, end=True)
        pieces = self._release(pieces)
        if self._choice.requires_call and not self._called_as_chosen():
            if not cut:
                raise ToolCallMissing(self._choice, self.text, self.calls)
            pieces, self._held = self._held + pieces, []
        return pieces

    def _pieces(self, segments: list[tuple[str | None, str]]) -> list[Piece]:
        pieces: list[Piece] = []
        for state, text in segments:
            if state == "tool":
                self._tool_text += text
                continue
            pieces += self._end_call(closed=True)
            if text:
                pieces += self._loose.feed(text) if self._loose else [TextPiece(text)]
        return pieces

    def _end_call(self, closed: bool) -> list[Piece]:
        """The call whose text just ended (`closed`: by its end marker), parsed by mlx-lm's parser for the family;
        its text as written when it does not parse (cut short by the token limit, or not what the family writes)."""
        if not self._tool_text:
            return []
        text, self._tool_text = self._tool_text, ""
        tokenizer = self._tokenizer
        assert tokenizer is not None  # call text gathers only in the state machine, made only with a tokenizer
        try:
            parsed = tokenizer.tool_parser(text, self._tools)
            return [_call(p) for p in (parsed if isinstance(parsed, list) else [parsed])]
        except Exception:  # noqa: BLE001 - each family's parser fails its own way on text it cannot read
            end = tokenizer.tool_call_end if closed and tokenizer.tool_call_end else ""
            return [TextPiece(tokenizer.tool_call_start + text + end)]

    def _laid_out(self, pieces: list[Piece], end: bool = False) -> list[Piece]:
        """The pieces without the whitespace that only lays calls out: text's trailing whitespace is held until text
        follows (then it goes before that text) or the answer ends (then, in an answer that made calls, it is left
        out), alike whether the text came whole or token by token. Else an answer of calls had a text too, of "\n"
        (Qwen2.5-Coder ends a bare call with `}}\n`), which Claude Code showed as the answer beside the call and
        sent back in the conversation."""
        out: list[Piece] = []
        for piece in pieces:
            if not isinstance(piece, TextPiece):
                out.append(piece)
                continue
            words = piece.text.rstrip()
            if words:
                out, self._blank = out + self._blank + [replace(piece, text=words)], []
            self._blank += [TextPiece(piece.text[len(words):])] if words != piece.text else []
        if end:
            made_calls = self.calls or any(isinstance(p, ToolCall) for p in out)
            out, self._blank = out + ([] if made_calls else self._blank), []
        return out

    def _release(self, pieces: list[Piece]) -> list[Piece]:
        """Record the pieces, holding text back while a required call has not come yet."""
        kept: list[Piece] = []
        for piece in pieces:
            if isinstance(piece, ToolCall):
                if self._one_call and self.calls:
                    continue  # one call was asked for, and a model no grammar holds may write several: the first is it
                self.calls.append(piece)
            else:
                self.text += piece.text
            kept.append(piece)
        pieces = kept
        if self._choice.requires_call and not self.calls:
            self._held += pieces
            return []
        out, self._held = self._held + pieces, []
        return out

    def _called_as_chosen(self) -> bool:
        if self._choice.mode == "named":
            return bool(self.calls) and all(c.name == self._choice.name for c in self.calls)
        return bool(self.calls)


def _call(parsed: dict[str, Any]) -> ToolCall:
    """A parser's {"name", "arguments"} (arguments an object or its JSON text) as a ToolCall."""
    arguments = parsed.get("arguments", {})
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ToolCall(str(parsed["name"]), text, str(parsed.get("id") or "") or new_call_id())
