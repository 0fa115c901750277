"""Our MTP drafts are MTPLX's, on the same random weights: what shows that a published head drafts here as there.

MTPLX (PyPI `mtplx`, a test-only dependency installed with --no-deps) runs its generation loop on macOS only, but
its head code (`mtplx.mtp_patch` for Qwen3.5/3.6, `mtplx.mimo_mtp_patch` for MiMo) runs anywhere: it patches an
mlx-lm model with `mtp_forward`. For every round of one of our greedy answers the test recomputes the round's
draft with MTPLX's code from scratch (the target's states over the whole context, a fresh head cache, then the
chain), and requires the same draft ids and logits within 1e-3 in float32. Our head is incremental (entries
carried from round to round and turn to turn, chain entries rewound), so this checks that bookkeeping too.

MTPLX feeds the head the target's post-norm state by default; mlx-lm #990 feeds it the pre-norm one. Parity with
MTPLX's default is why ours is post-norm; the pre-norm switch is checked against MTPLX run with
`hidden_variant="pre_norm"`, which is #990's formulation (the chain reads the head's normed output in both).
"""

from __future__ import annotations

import mlx.core as mx
import pytest

from engine.decoding.hidden_states import LAST_POST_NORM, LAST_PRE_NORM, LayerTap
from engine.decoding.pair import ModelPair
from engine.models.loading import load_model
from engine.params import GenerationParams
from tests.helpers import recorded_head_rounds

mtp_patch = pytest.importorskip("mtplx.mtp_patch", reason="MTPLX is a test-only dependency (make test installs it)")

GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=30, drafter="mtp", adaptive=False)


def _our_rounds(pair: ModelPair, monkeypatch: pytest.MonkeyPatch, prompts: list[str], k: int) -> list[tuple]:
    """(context, draft ids, draft logits (K, V)) of every round our drafter drafted, over answers to `prompts`."""
    return recorded_head_rounds(pair, pair.drafter_state("mtp").runner, monkeypatch, prompts, GREEDY.replace(num_draft=k))


def _mtplx_draft(model, context: list[int], ids: list[int], variant: str) -> mx.array:
    """MTPLX's logits for a round's draft positions, from scratch: the target over the context, then the head."""
    _, hidden = model(mx.array([context]), return_hidden=True, hidden_variant=variant)
    cache = model.make_mtp_cache()
    n = len(context)
    logits, chained = model.mtp_forward(hidden[:, : n - 1], mx.array([context[1:]]), mtp_cache=cache, return_hidden=True,
                                        mtp_hidden_variant="post_norm")
    rows = [logits[0, -1:]]
    chained = chained[:, -1:]
    for token in ids[:-1]:
        logits, chained = model.mtp_forward(chained, mx.array([[token]]), mtp_cache=cache, return_hidden=True,
                                            mtp_hidden_variant="post_norm")
        rows.append(logits[0, -1:])
    return mx.concatenate(rows, axis=0)


def _mtplx_model(folder, kind: str):
    """A fresh copy of the target with MTPLX's head patched in (MTPLX changes the model's class)."""
    loaded = load_model(str(folder))
    if kind == "dense":
        from mtplx.mimo_mtp_patch import inject_mimo_mtp_support

        assert inject_mimo_mtp_support(loaded.model, folder, loaded.config)
    else:
        assert mtp_patch.inject_mtp_support(loaded.model, folder, loaded.config)
    return loaded.model


@pytest.mark.parametrize(
    "kind, hidden",
    [("hybrid", LAST_POST_NORM), ("hybrid-sidecar", LAST_POST_NORM), ("dense", LAST_POST_NORM), ("hybrid", LAST_PRE_NORM)],
    ids=["hybrid", "hybrid-sidecar", "dense", "hybrid-pre-norm"],
)
def test_every_round_drafts_what_mtplx_drafts(kind: str, hidden: LayerTap, mtp_target, monkeypatch) -> None:
    pair = ModelPair(mtp_target(kind))
    pair.drafter_state("mtp").read(hidden)
    rounds = _our_rounds(pair, monkeypatch, ["abcabd", "abcabdgfe"], k=4)  # the second turn shares the first's prefix
    reference = _mtplx_model(mtp_target.folder(kind), kind)
    variant = "pre_norm" if hidden == LAST_PRE_NORM else "post_norm"
    assert len(rounds) > 10
    for context, ids, ours in rounds:
        theirs = _mtplx_draft(reference, context, ids, variant)
        assert mx.argmax(theirs, axis=-1).tolist() == ids, context
        assert float(mx.abs(ours - theirs).max()) < 1e-3, context


def test_the_default_is_mtplx_s_post_norm_and_the_switch_matters(mtp_target, monkeypatch) -> None:
    """Pre- and post-norm states draft differently (the switch is not a no-op), and our default is MTPLX's."""
    pair = ModelPair(mtp_target("hybrid"))
    assert pair.drafter_state("mtp").taps == (LAST_POST_NORM,)
    reference = _mtplx_model(mtp_target.folder("hybrid"), "hybrid")
    context, ids, ours = _our_rounds(pair, monkeypatch, ["abcabd"], k=4)[0]
    pre = _mtplx_draft(reference, context, ids, "pre_norm")
    assert float(mx.abs(ours - pre).max()) > 1e-2
