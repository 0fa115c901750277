"""Code and chat prompts keep their own acceptance estimates for the draft model (issue 27)."""

from __future__ import annotations

from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.decoding.policy.prompt_kind import draft_model_source, prompt_kind
from engine.params import GenerationParams


def test_code_is_told_from_chat() -> None:
    assert prompt_kind("Fix this:\n```python\nprint(1)\n```") == "code"
    assert prompt_kind("def add(a, b):\n    return a + b\n\nclass Stack:\n    pass\n") == "code"
    assert prompt_kind("int main() {\n  return 0;\n}\n") == "code"
    assert prompt_kind("What are three good habits for learning a new language?") == "chat"
    assert prompt_kind("Explain what a class is in Python.") == "chat"
    assert draft_model_source("```js\nlet x = 1;\n```") == "model:code" and draft_model_source("Hello") == "model"


def test_an_adaptive_pair_keeps_one_estimate_per_kind(tiny_pair: ModelPair) -> None:
    params = GenerationParams(drafter="model", temperature=0.0, max_tokens=24, adaptive=True)
    chat = generate("Tell me about the sea.", tiny_pair, params)
    code = generate("Finish this:\n```python\ndef add(a, b):\n    return a + b\n```", tiny_pair, params)
    assert [b.drafter for b in chat.stats.policy] == ["model"]
    assert [b.drafter for b in code.stats.policy] == ["model", "model:code"]
    assert code.stats.policy[1].verified_tokens > 0
