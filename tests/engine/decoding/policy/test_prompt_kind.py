"""Code and chat prompts keep policies of their own, for every drafter (issues 27 and 31)."""

from __future__ import annotations

import pytest

from engine.decoding.generation import _settings_key, generate
from engine.decoding.pair import ModelPair
from engine.decoding.policy.prompt_kind import kind_of
from engine.params import GenerationParams


@pytest.mark.parametrize("text, kind", [
    ("Fix this:\n```python\nprint(1)\n```", "code"),
    ("def add(a, b):\n    return a + b\n\nclass Stack:\n    pass\n", "code"),
    ("int main() {\n  return 0;\n}\n", "code"),
    # A request for code is code before any is shown: the benchmark's code-writing prompt read as chat (issue 31).
    ("Write a Python function that checks whether a string is a palindrome, with a docstring.", "code"),
    ("Implement quicksort in Rust.", "code"),
    ("Can you create a SQL query that counts users?", "code"),
    ("What are three good habits for learning a new language?", "chat"),
    ("What are three good habits for learning a new programming language?", "chat"),
    ("Explain what a class is in Python.", "chat"),
    ("Write a poem about the sea.", "chat"),
    ("Write a story about a class of children.", "chat"),
])
def test_code_is_told_from_chat(text: str, kind: str) -> None:
    assert kind_of(text) == kind


def test_an_adaptive_pair_keeps_one_policy_per_kind(tiny_pair: ModelPair) -> None:
    params = GenerationParams(drafter="model", temperature=0.0, max_tokens=24, adaptive=True)
    assert _settings_key(tiny_pair, params, "code") != _settings_key(tiny_pair, params, "chat")
    generate("Tell me about the sea.", tiny_pair, params)
    code = generate("Finish this:\n```python\ndef add(a, b):\n    return a + b\n```", tiny_pair, params)
    assert [b.drafter for b in code.stats.policy] == ["model"]  # the drafter's own name: the kind is the policy's
    assert code.stats.policy[0].verified_tokens == code.stats.drafted  # learnt on code alone, not on the chat before
