"""Whether a draft model can draft for a target: their tokenizers must map the same strings to the same ids.

Drafts are token ids; if the draft's id 1234 is a different string for the target, every draft is nonsense to
it. Comparing vocabulary sizes or embedding shapes is not enough either way: the Qwen family pads embedding
tables to different sizes over one vocabulary, and two vocabularies of one size can number tokens differently.
So we compare the vocabularies themselves. Differing special tokens or chat templates do not break drafting
and are reported as warnings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .load_progress import LoadProgress


@dataclass
class PairCheck:
    """The verdict on a draft/target pair.

    Attributes:
        compatible: whether the draft may draft for the target.
        reasons: why not (empty when compatible).
        warnings: differences that do not stop drafting.
    """

    compatible: bool
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def explain(self, target: str, draft: str) -> str:
        """One sentence for an error message or a tooltip."""
        if self.compatible:
            return f"{draft} can draft for {target}."
        return f"{draft} cannot draft for {target}: " + "; ".join(self.reasons) + "."


def _special_tokens(tokenizer: Any) -> set[str]:
    specials = set(getattr(tokenizer, "all_special_tokens", []) or [])
    added = getattr(tokenizer, "get_added_vocab", None)
    if added:
        specials |= set(added())
    return specials


def _readable(token: str, tokenizer: Any) -> str:
    """A vocabulary entry as the text it stands for, quoted (see _text)."""
    return repr(_text(token, tokenizer))


def _text(token: str, tokenizer: Any) -> str:
    """A vocabulary entry as the text it stands for ('ĊĠĠ' is a newline and two spaces). A SentencePiece
    byte-fallback entry is its byte, written as such: '<0x21>' decodes to '!', the same text as the vocabulary's own
    '!', so a reason said '!' was missing from a draft that has it. A piece of a multi-byte character decodes to
    '\ufffd', the same for every byte, so its bytes are shown instead: 'âĢ' (the first two bytes of '—') is
    '<0xE2><0x80>'."""
    if byte := BYTE.fullmatch(token):
        return _shown_byte(int(byte[1], 16))
    try:
        text = tokenizer.convert_tokens_to_string([token])
    except Exception:  # noqa: BLE001 - a tokenizer that cannot say shows the entry as it is
        text = token
    if REPLACEMENT in text and REPLACEMENT not in token:
        text = _byte_pieces(token)
    return text


REPLACEMENT = "\ufffd"
# A byte written as such, the one form both byte vocabularies come to: a SentencePiece byte-fallback entry is one
# whole (`fullmatch`); a byte-level BPE entry's text holds one wherever a byte is no whole character (`search`).
BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _shown_byte(byte: int) -> str:
    return f"<0x{byte:02X}>"


def _byte_pieces(token: str) -> str:
    """A byte-level BPE entry (each byte drawn as one character, GPT-2's table) that is part of a character: its
    text, bytes that are no whole character as '<0xE2>'."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    to_byte = {char: byte for byte, char in bytes_to_unicode().items()}
    if not all(char in to_byte for char in token):
        return token
    text = bytes(to_byte[char] for char in token).decode("utf-8", errors="surrogateescape")
    return "".join(_shown_byte(ord(c) - 0xDC00) if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text)


def _is_word(text: str) -> bool:
    """Whether a token's text reads as something: not blank, no byte written as such ('r<0xC3>' is an r and the
    first byte of 'é'; '<0x21>' a byte-fallback entry), and no control character ('\x04' is a byte-level
    vocabulary's byte 4, which printed as such in "Not offered")."""
    return bool(text.strip()) and not BYTE.search(text) and text.isprintable()


def _byte_kind(text: str) -> str:
    """What kind of byte entry a text that is no word and no blank is, in words."""
    byte = BYTE.fullmatch(text)
    if byte and int(byte[1], 16) < 0x80:
        return "single bytes"  # a byte-fallback entry of a whole character ('<0x21>' is '!')
    return "pieces of characters" if BYTE.search(text) else "bytes that print as no character"


def _examples(items: list[str], tokenizer: Any, limit: int = 3) -> str:
    """A few of the tokens as words a person reads; when none is a word (the differing entries are pieces of
    characters, byte-fallback entries, control bytes, or runs of spaces and newlines, which printed as "('<0x90>',
    '<0x9D>', …)", "('!', …)", "('\\x04', '\\x06', …)" and "('\\n      ', …)"), what kind of entries differ, in words."""
    texts = [_text(s, tokenizer) for s in items[:200]]
    words = [t for t in texts if _is_word(t)][:limit]
    if words:
        return ", ".join(repr(t) for t in words) + (", ..." if len(items) > len(words) else "")
    if all(not t.strip() for t in texts):
        return "runs of spaces and newlines: the tokenizers split whitespace differently"
    kinds = dict.fromkeys(_byte_kind(t) for t in texts if t.strip())
    return " and ".join(kinds) + ": the tokenizers split bytes differently"


def _renumbered(tokens: list[str], target: Any, target_vocab: dict[str, int], draft_vocab: dict[str, int]) -> str:
    """The reason for tokens the two number differently, with one that reads as a word as the example."""
    example = next((s for s in tokens[:200] if _is_word(_text(s, target))), None)
    if example is None:
        return f"{len(tokens)} tokens have different ids ({_examples(tokens, target)})"
    return (f"{len(tokens)} tokens have different ids (e.g. {_readable(example, target)} is {target_vocab[example]} for the "
            f"target, {draft_vocab[example]} for the draft)")


def check_tokenizers(target: Any, draft: Any) -> PairCheck:
    """Compare two tokenizers (Hugging Face or mlx-lm wrappers) string by string."""
    target_vocab: dict[str, int] = target.get_vocab()
    draft_vocab: dict[str, int] = draft.get_vocab()
    specials = _special_tokens(target) | _special_tokens(draft)

    renumbered = sorted(
        (s for s in target_vocab.keys() & draft_vocab.keys() if target_vocab[s] != draft_vocab[s]),
        key=lambda s: target_vocab[s],
    )
    only_target = sorted(target_vocab.keys() - draft_vocab.keys(), key=target_vocab.__getitem__)
    only_draft = sorted(draft_vocab.keys() - target_vocab.keys(), key=draft_vocab.__getitem__)

    check = PairCheck(compatible=True)
    regular_renumbered = [s for s in renumbered if s not in specials]
    regular_only_target = [s for s in only_target if s not in specials]
    regular_only_draft = [s for s in only_draft if s not in specials]
    if regular_renumbered:
        check.reasons.append(_renumbered(regular_renumbered, target, target_vocab, draft_vocab))
    if regular_only_target:
        check.reasons.append(f"{len(regular_only_target)} target tokens are missing from the draft ({_examples(regular_only_target, target)})")
    if regular_only_draft:
        check.reasons.append(f"{len(regular_only_draft)} draft tokens are missing from the target ({_examples(regular_only_draft, draft)})")
    check.compatible = not check.reasons

    special_diff = [s for s in renumbered + only_target + only_draft if s in specials]
    if special_diff:
        check.warnings.append(f"special tokens differ: {_examples(sorted(special_diff), target)}")
    for role in ("bos_token", "eos_token"):
        a, b = getattr(target, role, None), getattr(draft, role, None)
        if a != b:
            check.warnings.append(f"{role} differs ({a!r} for the target, {b!r} for the draft)")
    if getattr(target, "chat_template", None) != getattr(draft, "chat_template", None):
        check.warnings.append("chat templates differ (the target's is used)")
    return check


def can_rewind(model_path: Path) -> bool:
    """Whether a model's cache can go back after a rejected draft, judged from its config without loading weights.

    Every cache type mlx-lm builds can (attention by dropping, recurrent state from a snapshot; see
    engine/decoding/caches.py), so this answers False only for a model with a cache type mlx-lm added later.
    MLX arrays are lazy, so building the model object allocates nothing until its weights are evaluated.
    """
    import json

    from mlx_lm.models.cache import ArraysCache, CacheList, ChunkedKVCache, KVCache, QuantizedKVCache, RotatingKVCache
    from mlx_lm.utils import _get_classes

    from .folder_kind import build_failure

    known = (ArraysCache, ChunkedKVCache, KVCache, QuantizedKVCache, RotatingKVCache)

    def rewindable(layer: Any) -> bool:
        return all(rewindable(c) for c in layer.caches) if isinstance(layer, CacheList) else isinstance(layer, known)

    config = json.loads((model_path / "config.json").read_text())
    try:
        model_class, args_class = _get_classes(config)
        model = model_class(args_class.from_dict(config))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:  # a config mlx-lm cannot build
        raise build_failure(model_path, config, e) from e
    layers = model.make_cache() if hasattr(model, "make_cache") else [KVCache() for _ in model.layers]
    return all(rewindable(layer) for layer in layers)


def check_pair(target: str, draft: str, progress: LoadProgress | None = None) -> PairCheck:
    """Check a draft against a target by name, reading tokenizers and configs only (no weights: fast, but a GGUF
    file is imported first, its stages reported to `progress`)."""
    from mlx_lm.utils import load_tokenizer

    from .loading import resolve_model_path

    paths = {role: resolve_model_path(name, progress) for role, name in (("target", target), ("draft", draft))}
    check = check_tokenizers(load_tokenizer(paths["target"]), load_tokenizer(paths["draft"]))
    for role, path in paths.items():
        if not can_rewind(path):
            check.compatible = False
            check.reasons.append(
                f"the {role}'s cache cannot go back after a rejected draft (standard decoding only)"
            )
    return check
