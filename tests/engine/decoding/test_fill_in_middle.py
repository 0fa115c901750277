"""Fill in the middle: the prompt a code model fills in between a prefix and a suffix, laid out with its markers' ids,
the tokens the middle ends at, and a clear refusal for a model without such tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.decoding.fill_in_middle import fim_end_ids, fim_prompt_ids
from engine.errors import InvalidParameterError
from engine.fixtures.tiny_models import build_tokenizer

QWEN_MARKERS = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>", "<|file_sep|>")


@pytest.fixture(scope="module")
def fim_tokenizer(tmp_path_factory: pytest.TempPathFactory):
    """A tokenizer with Qwen2.5-Coder's fill-in-the-middle markers, as mlx-lm loads one."""
    from mlx_lm.utils import load_tokenizer

    return load_tokenizer(build_tokenizer(tmp_path_factory.mktemp("fim"), extra_special=QWEN_MARKERS))


def test_the_prompt_is_the_markers_around_prefix_and_suffix(fim_tokenizer) -> None:
    added = fim_tokenizer.get_added_vocab()
    prefix, suffix = "def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"
    ids = fim_prompt_ids(fim_tokenizer, prefix, suffix)
    encode = lambda text: fim_tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)
    assert ids == [added["<|fim_prefix|>"], *encode(prefix), added["<|fim_suffix|>"], *encode(suffix), added["<|fim_middle|>"]]
    as_ids = fim_prompt_ids(fim_tokenizer, encode(prefix), suffix)  # a prefix of token ids is taken as it is
    assert as_ids == ids


def test_code_holding_a_marker_s_text_is_read_as_code(fim_tokenizer) -> None:
    """The markers are placed by id: a prefix that quotes "<|fim_middle|>" must not end the prompt early."""
    middle = fim_tokenizer.get_added_vocab()["<|fim_middle|>"]
    code = 'tag = "<|fim_middle|>"\n'
    ids = fim_prompt_ids(fim_tokenizer, code, "")
    assert ids.count(middle) == 1 and ids[-1] == middle and fim_tokenizer.decode(ids[1:-2]) == code


def test_the_middle_ends_at_the_format_s_ends_the_vocabulary_has(fim_tokenizer) -> None:
    added = fim_tokenizer.get_added_vocab()
    assert fim_end_ids(fim_tokenizer) == {added[t] for t in ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|fim_prefix|>")}


def test_a_model_without_markers_is_refused_naming_models_that_have_them(tiny_target) -> None:
    with pytest.raises(InvalidParameterError, match="no fill-in-the-middle tokens.*Qwen2.5-Coder, StarCoder2, DeepSeek-Coder"):
        fim_prompt_ids(tiny_target.tokenizer, "a = ", "\n")


@pytest.mark.real_weights
def test_qwen2_5_coder_s_own_tokenizer_has_its_markers() -> None:
    """The real vocabulary (the imported 0.5B's tokenizer, when this machine has it)."""
    from mlx_lm.utils import load_tokenizer

    folder = Path.home() / ".cache/specchat-weights/imported/qwen2.5-coder-0.5b-instruct"
    if not (folder / "tokenizer.json").exists():
        pytest.skip("Qwen2.5-Coder-0.5B is not imported on this machine")
    tokenizer = load_tokenizer(folder)
    ids = fim_prompt_ids(tokenizer, "x = ", "\n")
    assert tokenizer.decode(ids).startswith("<|fim_prefix|>x = <|fim_suffix|>") and len(fim_end_ids(tokenizer)) == 5
