"""Generation settings: validated with messages that name the setting and its range; presets."""

from __future__ import annotations

import pytest

from engine.errors import InvalidParameterError
from engine.params import PRESETS, GenerationParams


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_draft": 0}, "Draft length (num_draft) must be at least 1, not 0."),
        ({"temperature": -0.5}, "Temperature must be 0 (greedy) or more, not -0.5."),
        ({"top_p": 0.0}, "top_p must be in (0, 1]"),
        ({"top_k": -1}, "top_k (0 switches it off) must be at least 0, not -1."),
        ({"num_draft": 65}, "Draft length (num_draft) must be at most 64, not 65."),
        ({"max_draft": 2.5}, "max_draft must be a whole number, not 2.5."),
        ({"min_p": 1.5}, "min_p must be in [0, 1]"),
        ({"max_tokens": 0}, "max_tokens must be at least 1"),
        ({"prefill_step_size": 0}, "prefill_step_size must be at least 1, not 0."),
        ({"num_draft": None}, "Draft length (num_draft) must be a whole number, not None."),
        ({"mode": "turbo"}, "mode must be one of speculative, standard"),
        ({"drafter": "oracle"}, "drafter must be one of auto, model, lookup, model+lookup"),
        ({"repetition_penalty": 0.0}, "repetition_penalty must be above 0"),
        ({"stop": ("",)}, "Stop strings must not be empty."),
        ({"lenience": 1.5}, "lenience must be in [0, 1] (0 is exact; above 0 is lossy), not 1.5."),
        ({"lenience": -0.1}, "lenience must be in [0, 1]"),
        ({"presence_penalty": 2.5}, "presence_penalty must be between -2 and 2 (0 switches it off), not 2.5."),
        ({"frequency_penalty": -3}, "frequency_penalty must be between -2 and 2"),
        ({"logit_bias": {5: 101}}, "logit_bias gives token 5 the bias 101: a bias is a number from -100 to 100."),
        ({"logit_bias": {-1: 5}}, "logit_bias names -1, which is no token id"),
        ({"logit_bias": {"5": 5}}, "logit_bias names '5', which is no token id"),
        ({"logit_bias": (5, 5)}, "logit_bias must map token ids to biases"),
    ],
)
def test_invalid_settings_are_refused_with_the_range(change: dict, message: str) -> None:
    with pytest.raises(InvalidParameterError) as error:
        GenerationParams(**change)
    assert message in str(error.value)


def test_presets() -> None:
    assert set(PRESETS) == {"greedy", "default", "creative", "conservative"}
    assert GenerationParams.preset("greedy").greedy
    assert GenerationParams.preset("creative").temperature > GenerationParams.preset("conservative").temperature
    assert GenerationParams.preset("greedy", max_tokens=9).max_tokens == 9
    with pytest.raises(InvalidParameterError, match="Unknown preset 'wild'"):
        GenerationParams.preset("wild")


def test_the_default_preset_is_the_dataclass_defaults() -> None:
    assert GenerationParams.preset("default") == GenerationParams()


def test_replace_validates() -> None:
    with pytest.raises(InvalidParameterError):
        GenerationParams().replace(num_draft=-3)
    assert GenerationParams(stop=["x"]).stop == ("x",)


def test_lenience_is_lossy_only_while_speculating() -> None:
    assert GenerationParams(lenience=0.3).lossy
    assert not GenerationParams(lenience=0.3, mode="standard").lossy
    assert not GenerationParams().lossy


def test_a_logit_bias_given_as_a_dict_is_kept_as_sorted_pairs() -> None:
    """Hashable and in one order: the settings a kept adaptive policy is found by (`generation._settings_key`)."""
    assert GenerationParams(logit_bias={9: -1.5, 2: 3}).logit_bias == ((2, 3), (9, -1.5))
