"""The head's per-pass message: a fixed-size int32 array, with a second one only for long prefill chunks."""

from __future__ import annotations

from engine.distributed.messages import FORWARD, HEADER, INLINE, STOP, Message, decode, encode


def test_a_round_travels_in_one_fixed_size_array() -> None:
    message = Message(FORWARD, trim=2, position=40, tokens=[5, 6, 7, 8, 9], kv_bits=8)
    values = encode(message).tolist()
    assert len(values) == HEADER + INLINE
    assert decode(values) == message


def test_the_longest_draft_fits_inline() -> None:
    message = Message(FORWARD, 0, 0, list(range(1, 66)))  # 64 drafts and the token before them
    assert decode(encode(message).tolist()) == message


def test_a_long_chunk_sends_its_count_first_and_the_tokens_after() -> None:
    tokens = list(range(INLINE + 10))
    values = encode(Message(FORWARD, 0, 7, tokens)).tolist()
    assert values[:HEADER] == [FORWARD, 0, 7, len(tokens), 0] and not any(values[HEADER:])
    assert decode(values, tokens) == Message(FORWARD, 0, 7, tokens)


def test_stop_carries_nothing_else() -> None:
    assert decode(encode(Message(STOP)).tolist()) == Message(STOP)
