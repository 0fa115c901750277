"""Drafting with a DSpark drafter keeps the output exactly the target's, greedy and sampled, on dense and hybrid
targets, with and without its confidence head's cut, and every round drafts what mlx-dspark drafts for it.

The tiny pairs (engine/fixtures/tiny_dspark.py, through tests/dflash_pairs.py) are DFlash's tiny targets with
random DSpark heads in DeepSeek's format (blocks of 7, all 7 slots drafting, a Markov head strong enough to change
drafts, a confidence head whose cuts vary), which the targets agree with now and then.
"""

from __future__ import annotations

import mlx.core as mx
import pytest
from mlx_dspark.target import Target

from engine.decoding import generation
from engine.decoding.generation import generate, generate_stream
from engine.decoding.pair import ModelPair
from engine.decoding.policy.draft_length import FixedDraftLength
from engine.errors import InvalidParameterError
from engine.events import RoundEvent
from engine.params import GenerationParams
from tests.engine.drafters.test_dspark import reference_block_logits, run_reference
from tests.helpers import (
    assert_a_regenerate_and_a_gap_keep_the_output,
    assert_sampling_is_exact,
    assert_turns_are_standard_decodings,
    rounds_with_contexts,
    two_turns,
)

GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=40, drafter="dspark")
KINDS = ["qwen3", "qwen3_5"]  # dense, hybrid
BLOCK = 7  # DeepSeek's blocks of 7 draft 7 tokens
THRESHOLD = 0.5  # a survival threshold at which the fixture's confidence head cuts drafts of 7 to 2..6


class CuttingPolicy(FixedDraftLength):
    """A fixed K whose confidence cut is on, at a set threshold (the adaptive policy's moves with its estimates)."""

    def __init__(self, k: int, threshold: float) -> None:
        super().__init__(k)
        self.threshold = threshold

    def least_survival(self) -> float:
        return self.threshold


@pytest.fixture
def cut_at(monkeypatch: pytest.MonkeyPatch):
    """Make every generation's policy a fixed K of its num_draft with the confidence cut at `threshold`."""

    def install(threshold: float) -> None:
        monkeypatch.setattr(generation, "_policy", lambda pair, params, prompt_kind: CuttingPolicy(params.num_draft, threshold))

    return install


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_dspark_drafts_are_token_identical_to_standard_decoding(kind: str, dflash_pairs) -> None:
    """K = 1 and 7: the block cut to its first draft and uncut, then the adaptive policy's cut between, as DFlash's.
    K = 2 and 4, which ran here before (4 of the two cases' 9 CPU s), cut the block as the confidence head does
    at each round of the test below (to 2 to 6 drafts), with the output checked there the same way."""
    pair = dflash_pairs.dspark_pair(kind)
    assert_turns_are_standard_decodings(pair, dflash_pairs.target(kind), GREEDY, [1, BLOCK])
    assert pair.target_cache.rewinds["reset"] == 0
    assert (pair.target_cache.rewinds["restored"] > 0) == (kind == "qwen3_5")


@pytest.mark.parametrize("kind", KINDS)
def test_the_confidence_cut_keeps_the_output_and_shortens_drafts(kind: str, dflash_pairs, cut_at) -> None:
    expected = [answer.tokens for answer in two_turns(ModelPair(dflash_pairs.target(kind)), GREEDY.replace(mode="standard"))]
    cut_at(THRESHOLD)
    pair = dflash_pairs.dspark_pair(kind)
    rounds = [e for e in generate_stream(pair, "abcabd", GREEDY.replace(num_draft=BLOCK, adaptive=False))
              if isinstance(e, RoundEvent) and e.drafted]
    assert max(r.drafted for r in rounds[:3]) < BLOCK  # the head cut the first rounds (the budget cuts only the last)
    assert [answer.tokens for answer in two_turns(pair, GREEDY.replace(num_draft=BLOCK, adaptive=False))] == expected


@pytest.mark.parametrize("kind", KINDS)
def test_a_regenerate_and_an_answer_the_drafter_did_not_hear_keep_the_output(kind: str, dflash_pairs) -> None:
    fixed = GREEDY.replace(num_draft=BLOCK, adaptive=False)
    assert_a_regenerate_and_a_gap_keep_the_output(dflash_pairs.dspark_pair(kind), dflash_pairs.target(kind), fixed)


def test_a_seeded_answer_is_standard_decodings_with_that_seed(dflash_pairs) -> None:
    """Coupled sampling: each Markov step draws with its own position's noise (the chooser gets its index)."""
    seeded = GenerationParams(temperature=1.0, top_p=1.0, max_tokens=40, drafter="dspark", seed=5)
    expected = generate("abcabd", ModelPair(dflash_pairs.target("qwen3")), seeded.replace(mode="standard")).tokens
    answer = generate("abcabd", dflash_pairs.dspark_pair("qwen3"), seeded.replace(num_draft=6, adaptive=False))
    assert answer.tokens == expected and answer.stats.accepted > 0


def test_the_round_events_and_stats_name_the_dspark_drafter(dflash_pairs) -> None:
    events = list(generate_stream(dflash_pairs.dspark_pair("qwen3"), "abcabd", GREEDY.replace(num_draft=BLOCK, adaptive=False)))
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    assert {r.drafter for r in rounds if r.drafted} == {"dspark"}
    assert max(r.drafted for r in rounds) == BLOCK  # every slot of the block drafts, the first too
    adaptive = generate("abcabd", dflash_pairs.dspark_pair("qwen3"), GREEDY)
    assert [belief.drafter for belief in adaptive.stats.policy] == ["dspark"]


def test_the_dspark_drafter_without_a_drafter_loaded_is_refused_in_one_line(dflash_pairs) -> None:
    with pytest.raises(InvalidParameterError, match="needs a DSpark drafter: load its folder as the draft \\(a DeepSeek DSpark checkpoint"):
        generate("abc", ModelPair(dflash_pairs.target("qwen3")), GREEDY)


def test_the_draft_model_drafter_with_a_dspark_draft_says_how_to_draft_with_it(dflash_pairs) -> None:
    with pytest.raises(InvalidParameterError, match="the draft loaded is a DSpark drafter: draft with the DSpark drafter"):
        generate("abc", dflash_pairs.dspark_pair("qwen3"), GREEDY.replace(drafter="model"))


def test_a_dspark_folder_as_the_draft_loads_its_drafter(dflash_pairs) -> None:
    """`--draft DSPARK_FOLDER`: no draft model, the DSpark drafter of the target."""
    target_dir, drafter_dir = dflash_pairs.dspark_folders("qwen3")
    pair = ModelPair.load(str(target_dir), str(drafter_dir))
    assert pair.draft is None and pair.drafter_loaded == "dspark" and pair.drafter_names() == ("lookup", "dspark")


# --- mlx-dspark's drafts, round by round -----------------------------------------------------------------------


def test_each_round_drafts_and_cuts_as_mlx_dspark_does_in_its_stream(dflash_pairs, cut_at) -> None:
    """mlx-dspark's greedy loop (cap 7, its confidence cut at THRESHOLD) and ours on the same prompt ids: the same
    rounds, each verifying the same ids (drafted by the Markov head, cut by the confidence head)."""
    target_dir, drafter_dir = dflash_pairs.dspark_folders("qwen3")
    tokens, recorder = run_reference(target_dir, drafter_dir, THRESHOLD)
    cut_at(THRESHOLD)
    pair = dflash_pairs.dspark_pair("qwen3")
    prompt = pair.tokenizer.encode("abcab")
    params = GREEDY.replace(num_draft=BLOCK, adaptive=False, max_tokens=len(tokens) + BLOCK + 1)  # never cut short
    ours = [context_and_draft[1] for context_and_draft in rounds_with_contexts(pair, [prompt], params)]
    ours = ours[1:]  # our first round drafts after the prompt; mlx-dspark's prefill emits the first token itself
    theirs = [r.ids[: r.verified] for r in recorder.rounds]
    assert len(theirs) > 5 and len({len(ids) for ids in theirs}) >= 3
    assert ours[: len(theirs)] == theirs


def _reference_drafts(target_dir, drafter_dir, contexts: list[list[int]]) -> list[list[int]]:
    """mlx-dspark's greedy drafts after each context, from scratch: its target's tapped pass over the context before
    the last token, a fresh drafter context, one block pass and its Markov head."""
    from mlx_dspark.load import load_drafter
    from mlx_lm import load

    model, tokenizer = load(str(target_dir))
    target = Target(model, tokenizer)
    drafter, _ = load_drafter(str(drafter_dir), quantize=False)
    drafts = []
    for context in contexts:
        _, hidden = target.run(mx.array([context[:-1]]), target.make_cache(), list(drafter.config.target_layer_ids))
        drafts.append(drafter.sample_block(reference_block_logits(drafter, context[-1], hidden), context[-1]).tolist())
    return drafts


@pytest.mark.parametrize("kind", KINDS)
def test_every_round_drafts_mlx_dsparks_greedy_block_for_its_context(kind: str, dflash_pairs) -> None:
    """Ours is incremental (positions fed from the target's own passes, prefill chunks absorbed, kept across turns,
    rewound by a Regenerate); mlx-dspark's is recomputed from scratch for each round's context. Same ids.

    Answers of 12 tokens give 22 to 28 rounds over the three prompts (24 tokens took twice the time), more than
    the 10 asked for."""
    target_dir, drafter_dir = dflash_pairs.dspark_folders(kind)
    params = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=12, drafter="dspark", num_draft=BLOCK,
                              adaptive=False, prefill_step_size=3)  # prompts reach it chunk by chunk
    rounds = rounds_with_contexts(dflash_pairs.dspark_pair(kind), ["abcabd", "abcabd", "abcabdgfeab"], params)
    assert len(rounds) > 10
    theirs = _reference_drafts(target_dir, drafter_dir, [context for context, _ in rounds])
    for (context, ours), reference in zip(rounds, theirs):
        assert ours == reference[: len(ours)], context


# --- sampled -----------------------------------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("kind", ["qwen3_5"])  # the hybrid target; the dense one is sampled under the cut below
def test_sampled_tokens_follow_the_target_distribution(kind: str, dflash_pairs) -> None:
    """At T = 1 the first two tokens of many answers match the target's exact distributions (tests/helpers.py): q
    of each position is the warped distribution of its Markov step, given the token drawn before it.

    Power against a correction drawn from p: noncentrality 0.173 per answer, 1.00 at 300 answers."""
    params = GenerationParams(temperature=1.0, top_p=1.0, max_tokens=2, num_draft=3, adaptive=False, drafter="dspark")
    assert_sampling_is_exact(dflash_pairs.dspark_pair(kind), params, 300)


@pytest.mark.statistical
def test_sampled_tokens_follow_the_target_distribution_under_the_confidence_cut(dflash_pairs, cut_at) -> None:
    """Where the confidence head stops a draft depends on the tokens before the one it would verify next, never on
    that token: the cut keeps sampling exact.

    Power against a correction drawn from p: noncentrality 0.098 per answer, 0.99 at 500 answers."""
    cut_at(THRESHOLD)
    params = GenerationParams(temperature=1.0, top_p=1.0, max_tokens=2, num_draft=BLOCK, adaptive=False, drafter="dspark")
    assert_sampling_is_exact(dflash_pairs.dspark_pair("qwen3"), params, 500)


def test_a_pair_with_a_dspark_folder_lists_it_among_its_drafters(dflash_pairs) -> None:
    pair = dflash_pairs.dspark_pair("qwen3")
    assert pair.drafter_names() == ("lookup", "dspark")
    pair.set_drafter("dspark", None)
    assert pair.drafter_names() == ("lookup",) and pair.drafter_loaded is None
