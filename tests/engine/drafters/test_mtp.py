"""The MTP head: built from the target's own attention layer, fed entry by entry or all at once alike."""

from __future__ import annotations

import mlx.core as mx

from engine.drafters.mtp import MTPRunner, head_blocks, text_model
from engine.drafters.mtp_loading import load_mtp_head


def test_the_head_layer_is_the_targets_attention_layer(mtp_target) -> None:
    hybrid, dense = mtp_target("hybrid").model, mtp_target("dense").model
    [layer] = head_blocks(hybrid, 1)
    assert type(layer) is type(text_model(hybrid).layers[1]) and not layer.is_linear  # GatedDeltaNet at 0, attention at 1
    assert hasattr(layer, "self_attn")
    assert type(head_blocks(dense, 1)[0]) is type(dense.layers[0])


def test_entries_fed_in_pieces_and_rewound_give_what_one_pass_gives(mtp_target) -> None:
    """The drafter feeds a round's accepted entries in one pass, chains draft entries and rewinds them: the
    outputs must not depend on how the entries were split."""
    target = mtp_target("hybrid")
    runner = MTPRunner(load_mtp_head(mtp_target.folder("hybrid"), target.model, target.config), target.model)
    hidden, ids = mx.random.normal((7, 64), key=mx.random.key(1)), mx.array([3, 1, 4, 1, 5, 2, 6])
    whole = runner.feed(hidden, ids)
    runner.reset()
    first = runner.feed(hidden[:3], ids[:3])
    runner.feed(hidden[3:5], mx.array([7, 7]))  # a draft's chain, rejected
    runner.rewind(3)
    rest = runner.feed(hidden[3:], ids[3:])
    assert runner.entries == 7
    assert mx.allclose(mx.concatenate([first, rest]), whole, atol=1e-5)
