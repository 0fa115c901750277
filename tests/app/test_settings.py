"""The saved settings: what a launch reads back of what earlier ones saved."""

from __future__ import annotations

from app.settings import PINNED_DRAFTERS, AppSettings
from engine.params import GenerationParams


def test_the_drafter_is_remembered_per_pair_and_a_pair_never_pinned_drafts_with_automatic(isolated_home) -> None:
    AppSettings().save_pinned_drafter("/m/target", "/m/draft", "lookup")
    AppSettings().save_pinned_drafter("/m/target", "", "mtp")
    assert AppSettings().pinned_drafter("/m/target", "/m/draft") == "lookup"
    assert AppSettings().pinned_drafter("/m/target", None) == "mtp"  # no draft, however it is spelled
    assert AppSettings().pinned_drafter("/m/other", "/m/draft") == "auto"
    AppSettings().save_pinned_drafter("/m/target", "/m/draft", "auto")
    assert AppSettings().pinned_drafter("/m/target", "/m/draft") == "auto"
    assert AppSettings().pinned_drafter("/m/target", "") == "mtp"  # the other pair's pin stays


def test_the_drafter_is_no_generation_setting_any_more(isolated_home) -> None:
    """Settings' "Drafts come from" saved one drafter for every pair: it is not read back, the pairs' pins are."""
    old = AppSettings()
    old.store.setValue("generation/drafter", "lookup")
    old.store.setValue("generation/temperature", 0.3)
    old.store.sync()
    assert AppSettings().params().drafter == "auto" and AppSettings().params().temperature == 0.3
    AppSettings().save_params(GenerationParams(drafter="model"))
    assert AppSettings().params().drafter == "auto"


def test_a_hand_edited_pin_list_leaves_every_pair_on_automatic(isolated_home) -> None:
    for broken in ("{not json", "[1, 2]"):
        AppSettings().store.setValue(PINNED_DRAFTERS, broken)
        assert AppSettings().pinned_drafter("/m/target", "") == "auto"


def test_a_pair_saved_with_the_targets_own_mtp_heads_as_its_draft_loads_the_target_alone(isolated_home) -> None:
    """An older SpecChat saved "built-in:mtp" as the draft of a target drafting with its heads; the heads are the
    target's and load with it, so the pair is the target alone (Automatic drafts with its heads)."""
    AppSettings().save_pair("Qwen/Qwen3.5-4B", "built-in:mtp")
    assert AppSettings().pair() == ("Qwen/Qwen3.5-4B", "")


def test_a_pin_the_pair_can_run_is_kept_without_a_word_and_one_it_cannot_is_set_aside_with_one(isolated_home) -> None:
    AppSettings().save_pinned_drafter("/m/t", "/m/d", "model+lookup")
    assert AppSettings().restored_drafter("/m/t", "/m/d", ("lookup", "model")) == ("model+lookup", "")
    AppSettings().save_pinned_drafter("/m/t", "/m/d", "dflash")
    drafter, line = AppSettings().restored_drafter("/m/t", "/m/d", ("lookup", "model"))
    assert drafter == "auto" and line == "This pair cannot run the DFlash drafter chosen for it before: drafting with Automatic."
    assert AppSettings().pinned_drafter("/m/t", "/m/d") == "auto"  # said once, not at every launch
