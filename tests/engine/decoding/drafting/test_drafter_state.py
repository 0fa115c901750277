"""A drafter's store of the target's hidden states keeps what the target's passes left, by position."""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from engine.decoding.drafting.drafter_state import HiddenStore
from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.params import GenerationParams

QUESTION = "What is in the image?"


def test_the_store_keeps_what_passes_left_and_forgets_what_a_rewind_replaced() -> None:
    store = HiddenStore()
    store.put(0, mx.arange(8).reshape(4, 2))
    store.put(4, mx.arange(8, 14).reshape(3, 2))
    assert store.rows(2, 6).tolist() == [[4, 5], [6, 7], [8, 9], [10, 11]]
    store.put(5, mx.full((2, 2), -1))  # the target ran position 5 again: what it held from 5 on is gone
    assert store.end == 7 and store.rows(4, 7).tolist() == [[8, 9], [-1, -1], [-1, -1]]
    store.drop_before(5)
    assert store.start == 5 and store.rows(4, 6) is None
    store.put(9, mx.zeros((1, 2)))  # a gap (passes it did not hear): only what follows it is kept
    assert (store.start, store.end) == (9, 10)


@pytest.mark.parametrize("kind", ["dflash", "mtp"])
def test_a_drafter_forgets_the_states_of_another_image_its_ids_cannot_tell_apart(
        vision_dir: Path, vision_images: list[Path], vision_image_twin: Path, tmp_path: Path, kind: str) -> None:
    """Two images of one size take the same ids. After an answer about one, a drafter answering about the other
    (read anew from its image) holds what a fresh pair's drafter holds for that image alone; asked about the first
    again, whose prefix the prompt cache takes back from its shelf without a pass, it keeps nothing of the other
    image and drafts from the states it hears next."""
    from engine.fixtures.tiny_vision_drafters import build_vision_dflash, build_vision_mtp

    def pair() -> ModelPair:
        if kind == "mtp":
            return ModelPair.load(str(build_vision_mtp(vision_dir, tmp_path / "tiny-vl-mtp")))
        return ModelPair.load(str(vision_dir), str(build_vision_dflash(vision_dir, tmp_path)))

    params = GenerationParams(drafter=kind, temperature=0.0, max_tokens=8, num_draft=3, adaptive=False)
    warm, fresh = pair(), pair()
    generate(QUESTION, warm, params, images=[vision_images[0]])
    generate(QUESTION, warm, params, images=[vision_image_twin])
    generate(QUESTION, fresh, params, images=[vision_image_twin])
    held, alone = _held(warm, kind), _held(fresh, kind)
    assert held.shape == alone.shape and np.allclose(held, alone, rtol=0, atol=1e-3)
    again = generate(QUESTION, warm, params, images=[vision_images[0]])
    assert warm.prompt_cache.hits == 1 and warm.drafters[kind].base >= again.stats.prompt_tokens - 1


def _held(pair: ModelPair, kind: str) -> np.ndarray:
    """The keys the drafter's first layer holds: what it built from the target's states. Compared within 1e-3, not
    exactly: where the warm pair reads the image after its cached prefix, the fresh one from the prompt's start, the
    passes have other row counts, and OpenBLAS's sums differ by ~1e-4 between those (the other image's states
    differ by up to 2.6)."""
    state = pair.drafters[kind]
    cache = state.runner.cache[0]
    return np.array(cache.keys[..., : int(cache.offset), :].astype(mx.float32))
