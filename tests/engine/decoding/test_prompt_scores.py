"""A prompt's tokens scored by the target, each given the ones before it, as one plain pass over the prompt scores them."""

from __future__ import annotations

import numpy as np
import pytest

from engine.decoding import prompt_scores
from engine.decoding.pair import ModelPair
from engine.decoding.prompt_scores import score_prompt
from tests.engine.decoding.test_logprobs import target_logprobs

TOP = 2


@pytest.mark.parametrize("chunk", [3, 256])  # several chunks, and one
def test_each_token_is_scored_as_a_plain_pass_scores_it(tiny_pair: ModelPair, monkeypatch, chunk: int) -> None:
    monkeypatch.setattr(prompt_scores, "SCORE_CHUNK", chunk)
    ids = tiny_pair.target.tokenizer.encode("The cat sat on the mat, and the dog sat on the log.")
    scores = score_prompt(tiny_pair, ids, TOP)
    expected = target_logprobs(tiny_pair, ids)
    assert len(scores) == len(ids) and scores[0] is None
    for i, score in enumerate(scores[1:], start=1):
        row = expected[i - 1]
        assert score is not None and score.token == ids[i]
        assert score.logprob == pytest.approx(row[ids[i]], abs=2e-4)
        assert [token for token, _ in score.top] == list(np.argsort(-row)[:TOP])


def test_scoring_leaves_the_pairs_caches_as_they_were(tiny_pair: ModelPair) -> None:
    held = list(tiny_pair.target_cache.tokens)
    score_prompt(tiny_pair, tiny_pair.target.tokenizer.encode("A short prompt"), 0)
    assert tiny_pair.target_cache.tokens == held


def test_a_cancel_ends_the_scores_where_they_got_to(tiny_pair: ModelPair, monkeypatch) -> None:
    monkeypatch.setattr(prompt_scores, "SCORE_CHUNK", 2)
    asked = []
    scores = score_prompt(tiny_pair, list(range(3, 13)), 0, cancel=lambda: asked.append(1) or len(asked) > 2)
    assert len(scores) == 1 + 2 * 2
