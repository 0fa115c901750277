"""The loaded pair: attaching and detaching drafts, and the id space distributions are compared in."""

from __future__ import annotations

from engine.decoding.pair import ModelPair


def test_vocab_width_is_the_target_logits_width(tiny_pair: ModelPair) -> None:
    assert tiny_pair.vocab_width == len(tiny_pair.tokenizer)


def test_drafts_can_be_swapped_without_reloading_the_target(tiny_pair: ModelPair, tiny_target) -> None:
    target_cache = tiny_pair.target_cache
    tiny_pair.set_draft(None)
    assert tiny_pair.draft is None and tiny_pair.draft_cache is None
    tiny_pair.set_draft(tiny_target)
    assert tiny_pair.draft is tiny_target and tiny_pair.target_cache is target_cache


def test_load_by_name_reports_progress_only_for_imports(tiny_dirs) -> None:
    stages = []
    pair = ModelPair.load(str(tiny_dirs[0]), str(tiny_dirs[1]), progress=lambda *a: stages.append(a))
    assert pair.draft is not None and stages == []
    assert pair.context_length == 1024
