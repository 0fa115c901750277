"""A draft must map the same strings to the same ids as the target; other differences are warnings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.decoding.pair import ModelPair
from engine.errors import IncompatiblePairError
from engine.models.compatibility import check_tokenizers
from engine.models.loading import load_model


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


@pytest.fixture(scope="module")
def tiny_mamba(tiny_dirs, tmp_path_factory) -> Path:
    """A tiny random Mamba (recurrent, its cache cannot rewind) with the tiny tokenizer."""
    import json

    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import mamba

    out = tmp_path_factory.mktemp("mamba")
    vocab = json.loads((tiny_dirs[0] / "config.json").read_text())["vocab_size"]
    config = {"model_type": "mamba", "vocab_size": vocab, "hidden_size": 32, "intermediate_size": 64, "state_size": 4,
              "num_hidden_layers": 1, "conv_kernel": 4, "use_bias": False, "use_conv_bias": True, "time_step_rank": 4}
    model = mamba.Model(mamba.ModelArgs.from_dict(config))
    mx.save_safetensors(str(out / "model.safetensors"), dict(tree_flatten(model.parameters())))
    (out / "config.json").write_text(json.dumps(config))
    for f in tiny_dirs[0].iterdir():
        if f.name.startswith(("tokenizer", "chat_template", "special")):
            shutil.copy(f, out / f.name)
    return out


def test_recurrent_models_can_draft_and_be_drafted_for(tiny_dirs, tiny_mamba) -> None:
    """Mamba's state cannot drop tokens, but returns to a snapshot: it takes part in speculation, exactly."""
    from engine.decoding.generation import generate
    from engine.models.compatibility import can_rewind, check_pair
    from engine.params import GenerationParams

    assert can_rewind(tiny_dirs[0]) and can_rewind(tiny_mamba)
    assert check_pair(str(tiny_dirs[0]), str(tiny_mamba)).compatible

    pair = ModelPair(load_model(str(tiny_mamba)))
    greedy = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=12, drafter="lookup", num_draft=3, adaptive=False)
    prompt = "Repeat: one two one two one two one two"
    assert generate(prompt, pair, greedy).tokens == generate(prompt, pair, greedy.replace(mode="standard")).tokens


@pytest.mark.real_weights
def test_real_tokenizers_smollm2_against_itself_and_against_renumbered_ids(smollm_dir: Path, tmp_path: Path) -> None:
    import json

    from engine.models.compatibility import check_pair

    assert check_pair(str(smollm_dir), str(smollm_dir)).compatible
    renumbered = tmp_path / "renumbered"
    shutil.copytree(smollm_dir, renumbered, ignore=shutil.ignore_patterns("*.safetensors"))
    (renumbered / "model.safetensors").symlink_to(smollm_dir / "model.safetensors")
    tokenizer = json.loads((renumbered / "tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    vocab["Ġthe"], vocab["Ġand"] = vocab["Ġand"], vocab["Ġthe"]
    (renumbered / "tokenizer.json").write_text(json.dumps(tokenizer))
    check = check_pair(str(smollm_dir), str(renumbered))
    assert not check.compatible
    assert f"2 tokens have different ids (e.g. ' the' is {vocab['Ġand']} for the target, {vocab['Ġthe']} for the draft)" in check.reasons[0]


def test_mismatch_reasons_show_text_not_bpe_symbols(tiny_target, other_tokenizer_model) -> None:
    """Byte-level vocabularies write a space as 'Ġ' and a newline as 'Ċ'; a person should read ' the' and '\\n'."""
    from engine.models.compatibility import check_tokenizers

    other = load_model(str(other_tokenizer_model))
    check = check_tokenizers(tiny_target.tokenizer, other.tokenizer)
    text = check.explain("target", "draft")
    assert not check.compatible and not any(symbol in text for symbol in "ĠĊĉ"), text


def test_a_piece_of_a_character_is_shown_as_its_bytes_not_as_a_replacement_mark(tiny_target) -> None:
    """Byte-level vocabularies hold pieces of multi-byte characters ('âĢ' is the first two bytes of '—'); decoded
    alone each became '�', so every such reason read ('�', '�', '�')."""
    vocab = tiny_target.tokenizer.get_vocab()
    pieces = {"Ã": "<0xC3>", "âĢ": "<0xE2><0x80>"}
    draft = FakeTokenizer({s: i for s, i in vocab.items() if s not in pieces})
    check = check_tokenizers(tiny_target.tokenizer, draft)
    assert check.reasons == ["2 target tokens are missing from the draft (pieces of characters: the tokenizers split "
                             "bytes differently)"]  # not "('<0xC3>', '<0xE2><0x80>')"
    assert "\ufffd" not in check.explain("target", "draft")


def test_differing_whitespace_runs_are_said_in_words_and_words_come_first_as_examples(tiny_target) -> None:
    """The picker's "Not offered" printed raw entries: "('\\n      ', '\\n        ', …)"."""
    vocab = tiny_target.tokenizer.get_vocab()
    spaces = [s for s in vocab if not tiny_target.tokenizer.convert_tokens_to_string([s]).strip()][:3]
    draft = FakeTokenizer({s: i for s, i in vocab.items() if s not in spaces})
    assert check_tokenizers(tiny_target.tokenizer, draft).reasons == [
        f"{len(spaces)} target tokens are missing from the draft (runs of spaces and newlines: the tokenizers split "
        "whitespace differently)"]
    word = next(s for s in vocab if tiny_target.tokenizer.convert_tokens_to_string([s]).strip().isalpha())
    draft = FakeTokenizer({s: i for s, i in vocab.items() if s not in spaces and s != word})
    reason = check_tokenizers(tiny_target.tokenizer, draft).reasons[0]
    assert reason.endswith(f"({tiny_target.tokenizer.convert_tokens_to_string([word])!r}, ...)")  # the word, not the blanks


def test_control_bytes_are_said_in_words_not_printed(tiny_target) -> None:
    """A byte-level vocabulary's single bytes 0x04, 0x06 decode to control characters: "Not offered" printed
    "('\\x04', '\\x06', '\\x13', ...)"."""
    from engine.models.compatibility import _text

    tokenizer = tiny_target.tokenizer
    vocab = tokenizer.get_vocab()
    controls = [s for s in vocab if len(t := _text(s, tokenizer)) == 1 and not t.isprintable() and not t.isspace()][:3]
    assert controls
    draft = FakeTokenizer({s: i for s, i in vocab.items() if s not in controls})
    assert check_tokenizers(tokenizer, draft).reasons == [
        f"{len(controls)} target tokens are missing from the draft (bytes that print as no character: the tokenizers "
        "split bytes differently)"]


def test_renumbered_tokens_are_shown_by_a_word(tiny_target) -> None:
    """The example of a renumbered token is one a person reads, not the first control byte in id order."""
    tokenizer = tiny_target.tokenizer
    vocab = tokenizer.get_vocab()
    first = sorted(vocab, key=vocab.__getitem__)
    control = next(s for s in first if not tokenizer.convert_tokens_to_string([s]).isprintable())
    word = next(s for s in first if vocab[s] > vocab[control] and tokenizer.convert_tokens_to_string([s]).strip().isalpha())
    swapped = {**vocab, control: vocab[word], word: vocab[control]}
    reason = check_tokenizers(tokenizer, FakeTokenizer(swapped)).reasons[0]
    assert reason.startswith(f"2 tokens have different ids (e.g. {tokenizer.convert_tokens_to_string([word])!r} is "), reason


def test_a_word_ending_in_a_piece_of_a_character_is_no_example(tiny_target) -> None:
    """"Not offered" gave 'r<0xC3>' (an r and the first byte of 'é') as an example of the tokens that differ."""
    from engine.models.compatibility import _text

    tokenizer = tiny_target.tokenizer
    vocab = tokenizer.get_vocab()
    pieces = [s for s in vocab if "<0x" in (t := _text(s, tokenizer)) and not t.startswith("<0x")]
    word = next(s for s in vocab if _text(s, tokenizer).strip().isalpha())
    assert pieces
    draft = FakeTokenizer({s: i for s, i in vocab.items() if s not in pieces and s != word})
    reason = check_tokenizers(tokenizer, draft).reasons[0]
    assert reason == f"{len(pieces) + 1} target tokens are missing from the draft ({_text(word, tokenizer)!r}, ...)", reason


def byte_fallback_tokenizer(vocab: dict[str, int]):
    """A SentencePiece-style tokenizer with byte fallback (Gemma's, Llama 2's): '<0x21>' decodes to '!'."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(vocab, [], unk_token="<unk>", byte_fallback=True))
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")


def test_a_byte_fallback_entry_is_said_as_a_byte_not_as_its_character() -> None:
    """A Gemma "Not offered" reason listed '<0x21>' as '!' among the target tokens missing from the draft, though the
    draft has '!' of its own: the entry missing is the byte, said as the other reasons say bytes."""
    vocab = {"<unk>": 0, "<0x21>": 1, "<0x0A>": 2, "<0xE2>": 3, "!": 4, "▁a": 5}
    target = byte_fallback_tokenizer(vocab)
    assert target.convert_tokens_to_string(["<0x21>"]) == "!"  # what "Not offered" showed
    without_bytes = FakeTokenizer({s: i for s, i in vocab.items() if not s.startswith("<0x")})
    assert check_tokenizers(target, without_bytes).reasons == [
        "3 target tokens are missing from the draft (single bytes and pieces of characters: the tokenizers split bytes "
        "differently)"]
    without_a_word = FakeTokenizer({s: i for s, i in vocab.items() if s not in ("<0x21>", "▁a")})
    assert check_tokenizers(target, without_a_word).reasons == ["2 target tokens are missing from the draft (' a', ...)"]
