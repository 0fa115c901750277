"""The same model hashes alike on every Mac; another size, quantization or config does not."""

from __future__ import annotations

from mlx_lm.models import llama

from engine.distributed.fingerprint import WORDS, fingerprint

CONFIG = {"model_type": "llama", "hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 64,
          "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "vocab_size": 64}


def model(**changes: object) -> llama.Model:
    return llama.Model(llama.ModelArgs.from_dict({**CONFIG, **changes}))


def test_the_same_model_gives_the_same_words() -> None:
    words = fingerprint(CONFIG, model())
    assert words == fingerprint(dict(CONFIG), model()) and len(words) == WORDS
    assert all(-(2**31) <= w < 2**31 for w in words)


def test_private_config_keys_are_left_out() -> None:
    assert fingerprint({**CONFIG, "_name_or_path": "/Users/a/model"}, model()) == fingerprint(CONFIG, model())


def test_another_shape_or_config_gives_other_words() -> None:
    base = fingerprint(CONFIG, model())
    assert fingerprint({**CONFIG, "num_hidden_layers": 3}, model(num_hidden_layers=3)) != base
    assert fingerprint({**CONFIG, "rope_theta": 5.0}, model()) != base
