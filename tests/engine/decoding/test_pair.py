"""The loaded pair: attaching and detaching drafts, and the id space distributions are compared in."""

from __future__ import annotations

from engine.decoding.pair import ModelPair
from engine.params import GenerationParams


def test_vocab_width_is_the_target_logits_width(tiny_pair: ModelPair) -> None:
    assert tiny_pair.vocab_width == len(tiny_pair.tokenizer)


def test_drafts_can_be_swapped_without_reloading_the_target(tiny_pair: ModelPair, tiny_target) -> None:
    target_cache = tiny_pair.target_cache
    tiny_pair.set_draft(None)
    assert tiny_pair.draft is None and tiny_pair.draft_cache is None
    tiny_pair.set_draft(tiny_target)
    assert tiny_pair.draft is tiny_target and tiny_pair.target_cache is target_cache


def test_load_by_name_reports_each_model_s_loading(tiny_dirs) -> None:
    """Each model's load says its stages in turn (how far they go: test_loading; an import's: test_gguf_import)."""
    stages: list[str] = []
    pair = ModelPair.load(str(tiny_dirs[0]), str(tiny_dirs[1]), progress=lambda stage, done, total: stages.append(stage))
    names = [name for folder in tiny_dirs for name in (f"Loading {folder.name}", f"Loading the tokenizer of {folder.name}")]
    assert pair.draft is not None and list(dict.fromkeys(stages)) == names
    assert pair.context_length == 1024


def first_round_drafts(pair: ModelPair, params: GenerationParams) -> int:
    from engine.decoding.generation import generate_stream
    from engine.events import RoundEvent

    return next(e.drafted for e in generate_stream(pair, "Tell me a story", params) if isinstance(e, RoundEvent))


def test_the_adaptive_policy_carries_over_between_answers_with_the_same_settings(tiny_pair: ModelPair, tiny_draft) -> None:
    """Issue 14: short answers paid for learning every time. On the tiny pair a draft as costly as the target
    never pays, so once learned the next answer's first round is plain; new settings or a new draft learn anew."""
    params = GenerationParams(max_tokens=40, num_draft=4, adaptive=True, drafter="model")
    assert first_round_drafts(tiny_pair, params) == 4  # nothing measured yet: draft to learn
    assert first_round_drafts(tiny_pair, params) == 0
    assert first_round_drafts(tiny_pair, params.replace(temperature=0.7, seed=1)) == 4
    tiny_pair.set_draft(tiny_draft)
    assert first_round_drafts(tiny_pair, params) == 4


def test_the_pair_lists_every_drafter_it_has_and_forgets_one_set_to_none(tiny_pair: ModelPair, tiny_target) -> None:
    """What an Automatic choice picks among: lookup, and the draft model while one is loaded."""
    assert tiny_pair.drafter_names() == ("model", "lookup")
    bare = ModelPair(tiny_target)
    assert bare.drafter_names() == ("lookup",) and bare.drafter_loaded is None
    bare.set_drafter("dflash", None)
    assert bare.drafters == {}
