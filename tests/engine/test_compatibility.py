"""A draft must map the same strings to the same ids as the target; other differences are warnings."""

from __future__ import annotations

import pytest

from engine.compatibility import check_tokenizers
from engine.errors import IncompatiblePairError
from engine.loading import load_model
from engine.pair import ModelPair


class FakeTokenizer:
    def __init__(self, vocab: dict[str, int], specials=(), eos="</s>", template="T") -> None:
        self.vocab, self.all_special_tokens, self.eos_token, self.bos_token, self.chat_template = vocab, list(specials), eos, None, template

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    def get_added_vocab(self) -> dict[str, int]:
        return {s: self.vocab[s] for s in self.all_special_tokens if s in self.vocab}


BASE = {"a": 0, "b": 1, "c": 2, "</s>": 3}


def test_identical_vocabularies_are_compatible_even_with_different_embedding_padding(tiny_target, tiny_draft) -> None:
    check = check_tokenizers(tiny_target.tokenizer, tiny_draft.tokenizer)
    assert check.compatible and not check.reasons and not check.warnings


def test_same_size_but_renumbered_is_refused() -> None:
    check = check_tokenizers(FakeTokenizer(BASE), FakeTokenizer({"a": 1, "b": 0, "c": 2, "</s>": 3}))
    assert not check.compatible
    assert "2 tokens have different ids (e.g. 'a' is 0 for the target, 1 for the draft)" in check.reasons[0]


def test_missing_tokens_are_refused() -> None:
    check = check_tokenizers(FakeTokenizer(BASE), FakeTokenizer({"a": 0, "b": 1, "</s>": 3, "z": 2}))
    assert not check.compatible
    assert any("1 target tokens are missing from the draft ('c')" in r for r in check.reasons)
    assert any("1 draft tokens are missing from the target ('z')" in r for r in check.reasons)


def test_special_token_and_template_differences_are_warnings() -> None:
    target = FakeTokenizer({**BASE, "<|x|>": 4}, specials=["<|x|>", "</s>"])
    draft = FakeTokenizer({**BASE, "<|y|>": 4}, specials=["<|y|>", "</s>"], eos="<|y|>", template="U")
    check = check_tokenizers(target, draft)
    assert check.compatible
    assert any("special tokens differ" in w for w in check.warnings)
    assert any("eos_token differs" in w for w in check.warnings)
    assert any("chat templates differ" in w for w in check.warnings)


def test_a_pair_with_a_foreign_tokenizer_is_refused_naming_both_models(tiny_target, other_tokenizer_model) -> None:
    other = load_model(str(other_tokenizer_model))
    with pytest.raises(IncompatiblePairError) as error:
        ModelPair(tiny_target, other)
    message = str(error.value)
    assert str(other_tokenizer_model) in message and str(tiny_target.name) in message
    assert "have different ids" in message or "missing from" in message
