"""A prompt's images reach a vision target's cache; then every decoder runs exactly on its language model."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from engine.decoding.generation import generate
from engine.decoding.image_prefill import image_prompt, with_images
from engine.decoding.pair import ModelPair
from engine.errors import InvalidParameterError
from engine.models.loading import LoadedModel
from engine.params import GenerationParams
from tests.helpers import chi_square, chi_square_critical

QUESTION = "What is in the image?"
GREEDY = GenerationParams(mode="standard", temperature=0.0, max_tokens=40)
SPECULATIONS = {
    "lookup": {"drafter": "lookup"},
    "draft model": {"drafter": "model", "num_draft": 3, "adaptive": False},
    "draft model, adaptive": {"drafter": "model"},
}


HIDDEN_STATE_DRAFTERS = ("mtp", "dflash", "dspark", "eagle3")


@pytest.fixture
def vision_pair(vision_target: LoadedModel, vision_draft: LoadedModel) -> ModelPair:
    return ModelPair(vision_target, vision_draft)


@pytest.fixture(scope="module")
def drafter_pairs(vision_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModelPair]:
    """The vision target with each drafter that reads its hidden states (engine/fixtures/tiny_vision_drafters.py)."""
    from engine.fixtures import tiny_vision_drafters as fixtures

    root = tmp_path_factory.mktemp("vision-drafters")
    pairs = {"mtp": ModelPair.load(str(fixtures.build_vision_mtp(vision_dir, root / "tiny-vl-mtp")))}
    for kind, build in (("dflash", fixtures.build_vision_dflash), ("dspark", fixtures.build_vision_dspark),
                        ("eagle3", fixtures.build_vision_eagle3)):
        pairs[kind] = ModelPair.load(str(vision_dir), str(build(vision_dir, root)))
    return pairs


@pytest.mark.parametrize("variant", SPECULATIONS.values(), ids=SPECULATIONS.keys())
def test_greedy_speculation_about_an_image_is_the_standard_answer(vision_pair: ModelPair, vision_images: list[Path],
                                                                  variant: dict) -> None:
    standard = generate(QUESTION, vision_pair, GREEDY, images=[vision_images[0]])
    speculative = generate(QUESTION, vision_pair, GREEDY.replace(mode="speculative", **variant), images=[vision_images[0]])
    assert speculative.tokens == standard.tokens
    if variant["drafter"] == "model":
        assert 0 < speculative.stats.accepted < speculative.stats.drafted  # drafts were both taken and corrected


@pytest.mark.parametrize("drafter", HIDDEN_STATE_DRAFTERS)
def test_greedy_drafting_from_hidden_states_about_an_image_is_the_standard_answer(
        drafter_pairs: dict[str, ModelPair], vision_images: list[Path], drafter: str) -> None:
    """Drafters that read the target's hidden states attach to a vision target's language model, hear the image
    prefill's states (their context starts at position 0, the image's tokens included) and stay exact."""
    pair = drafter_pairs[drafter]
    standard = generate(QUESTION, pair, GREEDY, images=[vision_images[0]])
    pair.reset_caches()  # the drafter hears the image's prefill, not a cache that holds it already
    speculative = generate(QUESTION, pair, GREEDY.replace(mode="speculative", drafter=drafter, num_draft=3, adaptive=False),
                           images=[vision_images[0]])
    assert speculative.tokens == standard.tokens
    assert speculative.stats.drafted > 0
    state = pair.drafters[drafter]
    assert state.base == 0 and len(state.ids) >= standard.stats.prompt_tokens - 1  # heard every prompt position


def test_two_images_give_two_answers_and_the_cache_never_mixes_them(vision_pair: ModelPair,
                                                                    vision_images: list[Path]) -> None:
    """The same question about two images renders the same text; the answers differ, and asking about the first
    again (after the second filled the cache) answers as a fresh pair does."""
    first = generate(QUESTION, vision_pair, GREEDY, images=[vision_images[0]])
    second = generate(QUESTION, vision_pair, GREEDY, images=[vision_images[1]])
    again = generate(QUESTION, vision_pair, GREEDY, images=[vision_images[0]])
    assert first.tokens != second.tokens
    assert again.tokens == first.tokens


def test_a_text_prompt_after_an_image_reads_as_on_a_fresh_pair(vision_target: LoadedModel, vision_pair: ModelPair,
                                                                vision_images: list[Path]) -> None:
    """The image's position shift is forgotten once the cache no longer holds the image."""
    generate(QUESTION, vision_pair, GREEDY, images=[vision_images[0]])
    after = generate("Tell me about cats.", vision_pair, GREEDY)
    assert after.tokens == generate("Tell me about cats.", ModelPair(vision_target), GREEDY).tokens


def test_a_text_only_target_says_it_cannot_see(tiny_pair: ModelPair, vision_images: list[Path]) -> None:
    with pytest.raises(InvalidParameterError, match=r"tiny-target cannot see images; pick a vision model such as"):
        generate(QUESTION, tiny_pair, GREEDY, images=[vision_images[0]])


def test_each_placeholder_becomes_its_images_tokens(vision_target: LoadedModel, vision_images: list[Path]) -> None:
    messages, sources = with_images(QUESTION, vision_images)
    pair = ModelPair(vision_target)
    ids = pair.prompt_ids(messages)
    prompt = image_prompt(vision_target, ids, sources)
    image_id = vision_target.sight.image_token_id
    grids = np.array(prompt.inputs["image_grid_thw"]).prod(axis=1) // 4  # the 2x2 merge
    assert ids.count(image_id) == 2
    assert prompt.ids.count(image_id) == int(grids.sum())
    assert [t for t in prompt.ids if t != image_id] == [t for t in ids if t != image_id]


def test_an_unreadable_image_is_named(vision_pair: ModelPair, tmp_path: Path) -> None:
    (tmp_path / "notes.png").write_text("not an image")
    with pytest.raises(InvalidParameterError, match="notes.png is not an image Pillow can read"):
        generate(QUESTION, vision_pair, GREEDY, images=[tmp_path / "notes.png"])


def _first_token_law(target: LoadedModel, ids: list[int], inputs: dict) -> np.ndarray:
    """p(x1 | image, question) at T=1 from mlx-vlm's whole model in one pass: no code of ours in the way."""
    logits = target.sight.model(mx.array([ids]), **inputs).logits[0, -1].astype(mx.float32)
    return np.exp(np.array(logits - mx.logsumexp(logits), dtype=np.float64))


@pytest.mark.statistical
@pytest.mark.parametrize("drafter", ["model", "mtp"])
def test_sampled_speculation_about_an_image_follows_the_target(vision_pair: ModelPair, drafter_pairs: dict[str, ModelPair],
                                                               vision_images: list[Path], drafter: str) -> None:
    """At T=1 the first token of speculative answers (a text-only draft model, or the MTP head that read the image
    through the target's states; K=3) follows the target's law given the image, computed by mlx-vlm's model directly.

    600 answers is the smallest sample that keeps the test's power: against an effect of size w = 0.3 (a
    sampler that followed the draft's law, or the law without the image, differs from the target by more) at
    alpha = 0.001 with up to 20 degrees of freedom, the chi-square test's power is about 0.96 (noncentrality
    n w^2 = 54)."""
    pair = vision_pair if drafter == "model" else drafter_pairs[drafter]
    params = GenerationParams(drafter=drafter, temperature=1.0, top_p=1.0, max_tokens=2, num_draft=3, adaptive=False)
    messages, sources = with_images(QUESTION, [vision_images[0]])
    prompt = image_prompt(pair.target, pair.prompt_ids(messages), sources)
    law = _first_token_law(pair.target, prompt.ids, prompt.inputs)
    mx.random.seed(2026)
    answers = [generate(QUESTION, pair, params, images=[vision_images[0]]) for _ in range(600)]
    assert sum(a.stats.drafted for a in answers) > sum(a.stats.accepted for a in answers) > 0  # drafts taken and refused
    stat, df = chi_square(Counter(a.tokens[0] for a in answers), dict(enumerate(law)), len(answers))
    print(f"chi-square {stat:.1f} at {df} degrees of freedom (critical {chi_square_critical(df):.1f})")
    assert stat < chi_square_critical(df), (stat, df)


def test_the_stream_says_how_many_tokens_each_image_became_before_the_prefill(vision_pair: ModelPair,
                                                                              vision_images: list[Path]) -> None:
    """One ImagesRead, before any other event, its counts the image tokens the prompt holds, in order (each image its own size)."""
    from engine.decoding.generation import generate_stream
    from engine.events import ImagesRead

    events = list(generate_stream(vision_pair, QUESTION, GREEDY.replace(max_tokens=2), images=vision_images))
    read = [e for e in events if isinstance(e, ImagesRead)]
    assert len(read) == 1 and events[0] is read[0]
    prompt = image_prompt(vision_pair.target, vision_pair.prompt_ids(with_images(QUESTION, vision_images)[0]),
                          vision_images)
    assert read[0].tokens == prompt.counts and sum(prompt.counts) == prompt.ids.count(vision_pair.target.sight.image_token_id)
    assert prompt.counts[0] != prompt.counts[1]
