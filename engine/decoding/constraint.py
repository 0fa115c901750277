"""Output constraints: a JSON Schema (or a Lark grammar) the answer must follow, enforced on draft and target alike.

llguidance (Microsoft's grammar engine behind Guidance, also used by vLLM and llama.cpp) holds the grammar's state
after the tokens emitted so far and gives the set of tokens allowed next as a bitmask. A row of logits is
constrained by setting the forbidden ids to -inf before anything else reads it (penalty, warp, choice, acceptance).
Speculation stays exact because every distribution the acceptance rule compares is constrained alike:

- standard decoding masks each step with the state after the tokens so far (so it reads each token before
  queueing the next step: the next mask depends on it);
- the draft model masks each drafted step with the state advanced over the draft so far (`draft_model.py`; one
  read per draft token, for the same reason);
- prompt lookup's drafts are checked against the grammar: a token it forbids ends the draft there;
- the round masks the target's verify rows position by position, row i with the state after d_1..d_i, and
  commits what it emitted (`speculative.py`).

States along a draft are tentative: `push` advances over a draft token, `rollback` returns to the committed state,
`advance` commits the tokens a round emitted.

JSON is written compactly (", " and ": " between items, no other whitespace): a model free to add whitespace can
write it forever, a known failure of constrained decoding.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import mlx.core as mx
import numpy as np
from llguidance import LLMatcher

from ..errors import InvalidParameterError

JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def schema_problem(schema: str) -> str | None:
    """Why `schema` (a JSON Schema's text) cannot constrain an answer, in llguidance's words; None if it can."""
    try:
        grammar = LLMatcher.grammar_from_json_schema(schema, defaults=JSON_OPTIONS)  # type: ignore[arg-type]  # llguidance types a TypedDict
    except ValueError as e:
        return f"it is not a JSON object ({e})"
    error = LLMatcher.validate_grammar(grammar)
    return None if not error or error.startswith("WARNING") else error.removeprefix("ERROR: ")


@lru_cache(maxsize=64)
def grammar_problem(lark: str) -> str | None:
    """Why `lark` (a Lark grammar, llguidance's dialect, or its JSON of several) cannot constrain an answer; None if
    it can. Kept per grammar: an agent sends the same custom tools' grammars with every request, and each check
    costs 10-25 ms (Codex's apply_patch, checked as it is and rewritten for a JSON string, then in its call)."""
    error = LLMatcher.validate_grammar(_grammar(lark))
    return None if not error or error.startswith("WARNING") else error.removeprefix("ERROR: ")


def _grammar(text: str) -> str:
    """llguidance's grammar for `text`: a Lark grammar, or already llguidance's JSON of several grammars (one Lark
    grammar naming the others, as `engine/serving/tool_grammar.py` puts a tool's grammar inside a call's envelope)."""
    return text if text.startswith('{"grammars"') else LLMatcher.grammar_from_lark(text)


def constraint_for(params: Any, tokenizer: Any, vocab_size: int) -> Constraint | None:
    """The constraint a request's settings ask for (`GenerationParams.json_schema` or `.grammar`), or None."""
    if params.json_schema:
        return Constraint.for_schema(params.json_schema, tokenizer, vocab_size)
    if params.grammar:
        return Constraint.for_lark(params.grammar, tokenizer, vocab_size)
    return None


class Constraint:
    """One answer's grammar state and the masks it puts on logits.

    Args:
        matcher: llguidance's matcher, at the start of the answer.
        vocab_size: the width of the logits it masks (the target's).
        eos_ids: the end-of-sequence ids, allowed when the grammar is complete.
    """

    def __init__(self, matcher: Any, vocab_size: int, eos_ids: list[int]) -> None:
        self._matcher = matcher
        self.vocab_size = vocab_size
        self._eos = np.zeros(vocab_size, dtype=bool)
        self._eos[[i for i in eos_ids if i < vocab_size]] = True
        self._pushed = 0

    @classmethod
    def for_schema(cls, schema: str, tokenizer: Any, vocab_size: int) -> Constraint:
        """The constraint of a JSON Schema (its text) for a model's tokenizer (mlx-lm's wrapper)."""
        problem = schema_problem(schema)
        if problem:
            raise InvalidParameterError(f"The JSON schema cannot constrain an answer: {problem}. Fix the schema.")
        grammar = LLMatcher.grammar_from_json_schema(schema, defaults=JSON_OPTIONS)  # type: ignore[arg-type]  # llguidance types a TypedDict
        return cls(LLMatcher(grammar_tokenizer(tokenizer, vocab_size), grammar), vocab_size, sorted(tokenizer.eos_token_ids))

    @classmethod
    def for_lark(cls, lark: str, tokenizer: Any, vocab_size: int) -> Constraint:
        """The constraint of a Lark grammar (a freeform tool's input, as Codex's apply_patch describes it), or of
        llguidance's JSON of several (a tool call's envelope around such a grammar)."""
        problem = grammar_problem(lark)
        if problem:
            raise InvalidParameterError(f"The grammar cannot constrain an answer: {problem}. Fix the grammar.")
        return cls(LLMatcher(grammar_tokenizer(tokenizer, vocab_size), _grammar(lark)), vocab_size, sorted(tokenizer.eos_token_ids))

    @property
    def finished(self) -> bool:
        """Whether the grammar takes nothing more but the end of the answer."""
        return bool(self._matcher.is_stopped())

    def mask(self) -> mx.array:
        """(1, V) booleans: the tokens allowed next, in the current state (tentative tokens included)."""
        bits = np.unpackbits(np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")
        allowed = bits[: self.vocab_size].astype(bool)
        # An empty set (the grammar stopped, or broke) ends the answer rather than leaving every logit -inf.
        return mx.array((allowed if allowed.any() else self._eos)[None, :])

    def push(self, token: int) -> bool:
        """Advance tentatively over a draft token; False (and no change) if the grammar forbids it."""
        if self._matcher.try_consume_tokens([token]) != 1:
            return False
        self._pushed += 1
        return True

    def rollback(self) -> None:
        """Back to the committed state (the tokens emitted so far)."""
        if self._pushed:
            self._matcher.rollback(self._pushed)
            self._pushed = 0

    def masks_along(self, tokens: list[int]) -> tuple[int, mx.array]:
        """How many leading `tokens` the grammar allows, n, and (n + 1, V) masks: in the committed state, then
        after each allowed token (the verify rows' masks). The state is left as it was."""
        rows = [self.mask()]
        for token in tokens:
            if not self.push(token):
                break
            rows.append(self.mask())
        kept = self._pushed
        self.rollback()
        return kept, mx.concatenate(rows, axis=0)

    def advance(self, tokens: list[int]) -> None:
        """Commit the tokens a round emitted."""
        self.rollback()
        for token in tokens:
            self._matcher.try_consume_tokens([token])


def restrict(logits: mx.array, mask: mx.array) -> mx.array:
    """(L, V) logits with the ids a (L, V) or (1, V) mask forbids at -inf."""
    return mx.where(mask, logits, mx.array(-mx.inf, dtype=logits.dtype))


@lru_cache(maxsize=4)
def grammar_tokenizer(tokenizer: Any, vocab_size: int) -> Any:
    """llguidance's view of a model's tokenizer (mlx-lm's wrapper), which also knows each token's bytes (about 0.7 s
    to build for SmolLM2's 49k tokens, so kept per tokenizer)."""
    from llguidance.hf import from_tokenizer

    return from_tokenizer(tokenizer._tokenizer, n_vocab=vocab_size, eos_token=sorted(tokenizer.eos_token_ids))
