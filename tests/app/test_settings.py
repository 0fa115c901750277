"""The saved settings: what a launch reads back of what earlier ones saved."""

from __future__ import annotations

from app.settings import AppSettings
from engine.params import GenerationParams


def test_a_model_saved_before_automatic_was_offered_becomes_automatic_and_a_pinned_choice_stays(isolated_home) -> None:
    """Every saved settings file held drafter=model, the old default, whether or not the user chose it: Automatic
    replaces it once; whatever is saved from then on (a pinned draft model too) is kept."""
    old = AppSettings()
    old.store.setValue("generation/drafter", "model")
    old.store.setValue("generation/temperature", 0.3)
    old.store.sync()
    assert AppSettings().params().drafter == "auto" and AppSettings().params().temperature == 0.3
    old.store.setValue("generation/drafter", "lookup")
    assert AppSettings().params().drafter == "lookup"
    AppSettings().save_params(GenerationParams(drafter="model"))
    assert AppSettings().params().drafter == "model"
