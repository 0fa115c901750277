"""Our EAGLE-3 drafts are mlx-vlm's, on the same random weights: what shows that a published drafter drafts here as there.

mlx-vlm 0.7.10 (a test-only dependency installed with --no-deps) ships an MLX EAGLE-3 drafter,
`mlx_vlm.speculative.drafters.eagle3.Eagle3DraftModel`, which reads speculators checkpoints. Two checks:

- the network: on random weights (several config variants) and random tapped states, our drafter's prefill and
  chained steps give mlx-vlm's logits within 1e-3 in float32 (ours at the target's width, -inf outside d2t);
- the round: for every round of our greedy answers on the tiny pair, mlx-vlm recomputes the round's draft from
  scratch (the target's states over the whole context captured its way: the outputs of the layers before the
  tapped ones, a fresh drafter cache, then its chain) and gives the same draft ids and logits. Our drafter is
  incremental (entries carried from round to round and turn to turn, chained entries rewound), and reads the
  inputs of the tapped layers from the verify pass itself, so this checks that bookkeeping and that capture too.
"""

from __future__ import annotations

import mlx.core as mx
import pytest

from engine.decoding.pair import ModelPair
from engine.drafters.eagle3 import parse_config
from engine.fixtures.tiny_eagle3 import DRAFT_IDS, drafter_config, drafter_weights
from engine.params import GenerationParams
from tests.helpers import recorded_head_rounds

vlm_eagle3 = pytest.importorskip("mlx_vlm.speculative.drafters.eagle3",
                                 reason="mlx-vlm is a test-only dependency (make test installs it)")

GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=30, drafter="eagle3", adaptive=False)
TOLERANCE = 1e-3


def _vlm_drafter(config: dict, weights: dict, target) -> object:
    """mlx-vlm's drafter for a speculators config and its weights, bound to the target (its embeddings)."""
    model = vlm_eagle3.Model(vlm_eagle3.ModelConfig.from_dict(config))
    model.load_weights(list(model.sanitize(dict(weights)).items()), strict=False)
    model.reset(target)
    return model


def _vlm_draft(drafter, context_ids: list[int], hidden: mx.array, k: int) -> tuple[list[int], mx.array]:
    """mlx-vlm's greedy draft of `k` tokens after `context_ids` from the taps of its positions, and its logits (k, draft V)."""
    rows: list[mx.array] = []
    logits_of = drafter._logits
    drafter._logits = lambda h: rows.append(logits_of(h)[0]) or rows[-1][None]
    argmax = lambda x: mx.argmax(x, axis=-1)  # unused at greedy, required by the signature
    drafter.prefill_from_target_hidden(mx.array([context_ids[:-1]]), hidden, context_ids[-1], argmax, greedy=True)
    ids = drafter.draft_block(context_ids[-1], hidden[:, -1:], None, k + 1, argmax, greedy=True)
    return ids[0].tolist(), mx.concatenate(rows, axis=0)


def _same_logits(ours: mx.array, theirs: mx.array) -> None:
    """Ours (rows, target V) at the draft ids equal theirs (rows, draft V); every other id is -inf in ours."""
    outside = [i for i in range(ours.shape[-1]) if i not in DRAFT_IDS]
    assert mx.abs(ours[:, DRAFT_IDS] - theirs).max().item() < TOLERANCE
    assert bool(mx.all(ours[:, outside] == -mx.inf))


@pytest.mark.parametrize("variant", [{}, {"norm_before_residual": False}, {"norm_before_fc": True}, {"layers": 2}])
def test_the_network_computes_mlx_vlms_logits(variant: dict, eagle3_pair) -> None:
    from engine.drafters.eagle3_model import DraftVocabulary, Eagle3Model, Eagle3Runner

    config = drafter_config(variant.get("norm_before_residual", True), variant.get("layers", 1))
    config["norm_before_fc"] = variant.get("norm_before_fc", False)
    weights = drafter_weights(config, seed=3)
    target = eagle3_pair.target().model
    ours = Eagle3Model(parse_config(config, eagle3_pair.root))
    ours.load_weights([(k, v) for k, v in weights.items() if k not in ("d2t", "t2d")], strict=True)
    runner = Eagle3Runner(ours, target, DraftVocabulary(mx.array(DRAFT_IDS), 8), ((1, "input"), (2, "input"), (3, "output")))
    context = [1, 2, 3, 1, 2, 4, 6, 1]
    taps = [mx.random.normal((len(context), 64)) for _ in range(3)]
    outputs = runner.feed(runner.project([t[:-1] for t in taps]), mx.array(context[1:]))[-1:]
    rows, ids = [], []
    for _ in range(4):
        rows.append(runner.logits(outputs))
        ids.append(int(mx.argmax(rows[-1], axis=-1).item()))
        outputs = runner.feed(outputs, mx.array(ids[-1:]))
    vlm_ids, vlm_rows = _vlm_draft(_vlm_drafter(config, weights, target), context, mx.concatenate(taps, -1)[None, :-1], 4)
    assert ids == vlm_ids
    _same_logits(mx.concatenate(rows, axis=0), vlm_rows)


def _our_rounds(pair: ModelPair, monkeypatch: pytest.MonkeyPatch, prompts: list[str], k: int) -> list[tuple]:
    """(context, draft ids, draft logits (K, V)) of every round our drafter drafted, over answers to `prompts`."""
    return recorded_head_rounds(pair, pair.drafter_state("eagle3").runner, monkeypatch, prompts, GREEDY.replace(num_draft=k))


def _vlm_taps(target, config: dict, context: list[int]) -> mx.array:
    """The target's states over `context` as mlx-vlm captures them: the outputs of its `capture_layer_ids`."""
    from mlx_lm.models.base import create_attention_mask

    h = target.model.embed_tokens(mx.array([context]))
    mask = create_attention_mask(h, None)
    outputs = []
    for layer in target.model.layers:
        h = layer(h, mask, None)
        outputs.append(h)
    capture = vlm_eagle3.ModelConfig.from_dict(config).capture_layer_ids
    return mx.concatenate([outputs[i] for i in capture], axis=-1)


@pytest.mark.parametrize("k", [3, 5])
def test_every_round_drafts_what_mlx_vlm_drafts(k: int, eagle3_pair, monkeypatch: pytest.MonkeyPatch) -> None:
    _, folder = eagle3_pair.folders()
    config = drafter_config()
    weights = dict(mx.load(str(folder / "model.safetensors")))
    target = eagle3_pair.target().model
    rounds = _our_rounds(eagle3_pair.pair(), monkeypatch, ["abcabd", "abcabdgfe"], k)
    assert len(rounds) > 10 and sum(1 for _, ids, _ in rounds if len(set(ids)) > 1) > 3
    for context, ids, logits in rounds:
        hidden = _vlm_taps(target, config, context)[:, :-1]
        vlm_ids, vlm_logits = _vlm_draft(_vlm_drafter(config, weights, target), context, hidden, len(ids))
        assert ids == vlm_ids, context
        _same_logits(logits, vlm_logits)
