"""Compare is fair: both runs from an empty prompt cache, in alternating order, with what explains the speedup."""

from __future__ import annotations

from engine.comparison import side_label
from tests.app.conftest import send_and_wait


def test_both_runs_start_from_an_empty_prompt_cache_and_take_turns_going_first(make_window, qtbot) -> None:
    """The speculative run used to reuse the prompt the standard run had just read: its first token came 4x sooner."""
    window = make_window(max_tokens=20)
    send_and_wait(qtbot, window, "Hello")  # the conversation is in the prompt cache now
    orders = []
    for _ in range(2):
        window.compare()
        dialog = window.compare_dialog
        qtbot.waitUntil(lambda dialog=dialog: len(dialog.results) == 2, timeout=60_000)
        first, second = dialog.request_ids
        orders.append((first, second))
        assert dialog.request_ids[first] < dialog.request_ids[second]  # sent, and so run, in this order
        standard, speculative = dialog.results["standard"].stats, dialog.results["model"].stats
        assert standard.cached_prompt_tokens == 0 and speculative.cached_prompt_tokens == 0
        assert standard.prompt_tokens == speculative.prompt_tokens > 0
        assert f"with the same settings (and seed); {side_label(first)} runs first" in dialog.fairness.text()
        assert f"{speculative.tokens_per_pass:.2f} tokens per pass" in dialog.speedup.text()
        assert f"{speculative.acceptance_rate:.0%} of {speculative.drafted} drafted accepted" in dialog.speedup.text()
        dialog.close()
    assert orders == [("standard", "model"), ("model", "standard")]


def test_neither_run_drafts_from_the_other_runs_answer(make_window, qtbot) -> None:
    """The first run's answer used to join the history lookup drafts from, so the second copied it: a Compare
    on SmolLM2 read 7.06x with 10.2 tokens per pass."""
    window = make_window(max_tokens=30, drafter="lookup", adaptive=True)
    send_and_wait(qtbot, window, "Hello")
    history = window.session.engine.pair.history
    before = history.additions
    window.compare()
    dialog = window.compare_dialog
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    assert history.additions == before > 0


def test_sampled_without_a_seed_both_sides_write_the_same_answer(make_window, qtbot) -> None:
    """A new user's Compare at temperature 0.6: each side sampled its own answer, and lookup, copying one that fell
    into a loop, was declared 2.58x as fast. Both sides now share one seed, so they time the same text."""
    dialog = _open_compare(make_window, qtbot, max_tokens=40, drafter="lookup", temperature=0.9)
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    assert dialog.results["standard"].tokens == dialog.results["lookup"].tokens
    assert dialog.views["standard"].answer_text() == dialog.views["lookup"].answer_text()
    dialog.close()


def test_stop_ends_both_runs_and_draws_no_verdict(make_window, qtbot) -> None:
    """A new user's Compare ran each side to the token limit, 90 s here, with no way to stop it but to wait."""
    dialog = _open_compare(make_window, qtbot, "Write a poem", max_tokens=900)
    first = next(iter(dialog.request_ids))
    qtbot.waitUntil(lambda: dialog.speeds[first].text() == "generating…", timeout=60_000)
    assert dialog.stop_button.isEnabled() and not dialog.run_button.isEnabled()
    dialog.stop_button.click()
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    assert sum(len(r.tokens) for r in dialog.results.values()) < 1800  # they did not both run on to the limit
    assert any(r.finish_reason == "cancelled" and "stopped" in dialog.speeds[side].text().lower() for side, r in dialog.results.items())
    assert dialog.speedup.text().startswith("Stopped")
    assert dialog.run_button.isEnabled() and not dialog.stop_button.isEnabled()
    dialog.close()


def test_rejected_drafts_show_in_the_speculative_column(make_window, qtbot) -> None:
    window = make_window(max_tokens=40)
    send_and_wait(qtbot, window, "Hello")
    window.compare()
    dialog = window.compare_dialog
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    assert list(dialog.views["model"].ghost_fragments()) and not list(dialog.views["standard"].ghost_fragments())
    dialog.close()


def test_compare_never_drafts_this_chat_s_saved_answer_and_says_which_drafters_ran(make_window, qtbot) -> None:
    """Issue 22: a new prompt answered at 1.1 tokens per pass; Compare then claimed 5.00x, 100% accepted, because
    lookup copied the answer just saved. The speculative run drafts as it would with the history off."""
    window = make_window(max_tokens=40, drafter="model+lookup", num_draft=4)
    answer = send_and_wait(qtbot, window, "Tell me about the lighthouse keeper and the storm at sea.")
    window.compare()
    dialog = window.compare_dialog
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    speculative = dialog.results["model+lookup"]
    assert speculative.tokens == answer.tokens  # greedy: the same text
    # Copying the saved answer, lookup drafted every round and all was accepted (32 of 32 here, 8 rounds).
    assert speculative.stats.acceptance_rate < 0.9 and dialog.drafters["model+lookup"]["model"] > 0
    assert "Drafted by draft model in " in dialog.speeds["model+lookup"].text()
    assert dialog.speeds["model+lookup"].text().startswith(speculative.summary())
    dialog.close()


def test_the_drafters_line_names_each_drafter_and_the_plain_rounds() -> None:
    from collections import Counter

    from app.compare_dialog import drafters_line

    assert drafters_line(Counter({"model": 6, "lookup": 1, "none": 3})) == (
        "Drafted by draft model in 6 rounds, lookup in 1 round; 3 rounds drafted nothing "
        "(lookup left out saved chats that asked this question).")
    assert drafters_line(Counter({"dspark": 2, "none": 58})) == (
        "Drafted by DSpark drafter in 2 rounds; 58 rounds drafted nothing.")
    assert drafters_line(Counter({"none": 9})) == "Nothing was drafted: this side ran as standard decoding."


def test_a_long_speedup_line_wraps_instead_of_widening_the_dialog(make_window, qtbot) -> None:
    """Issue 22: the dialog grew to 1444 px wide, off a 1600 px screen."""
    window = make_window(max_tokens=20)
    send_and_wait(qtbot, window, "Hello")
    window.compare()
    dialog = window.compare_dialog
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    dialog.speedup.setText(dialog.speedup.text() * 3)
    assert dialog.minimumSizeHint().width() < 1000
    dialog.close()


def _open_compare(make_window, qtbot, question: str = "Hello", **generation: object):
    """A window that answered a message, and the Compare dialog it opened (running standard against its drafter)."""
    window = make_window(**generation)
    send_and_wait(qtbot, window, question)
    window.compare()
    return window.compare_dialog


def _pick_and_run(qtbot, dialog, left: str, right: str) -> None:
    """Pick a side in each column and press Run (waiting for the run before it first)."""
    qtbot.waitUntil(dialog.run_button.isEnabled, timeout=60_000)
    for picker, side in zip(dialog.pickers, (left, right)):
        picker.setCurrentIndex(picker.findData(side))
    dialog.run_button.click()


def test_the_user_picks_two_drafters_and_sees_them_side_by_side(make_window, qtbot) -> None:
    """Compare used to contrast standard and speculative decoding only: two drafters could not meet on a prompt."""
    dialog = _open_compare(make_window, qtbot, max_tokens=30)
    assert dialog.sides == ("standard", "model")  # until the user picks: standard against the chat's drafter
    _pick_and_run(qtbot, dialog, "lookup", "model")
    assert not dialog.run_button.isEnabled()  # one run at a time
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    lookup, model = dialog.results["lookup"], dialog.results["model"]
    assert (lookup.drafter, model.drafter) == ("lookup", "model")
    assert set(dialog.drafters["model"]) - {"none"} == {"model"} and set(dialog.drafters["lookup"]) <= {"lookup", "none"}
    assert lookup.tokens == model.tokens and dialog.views["lookup"].answer_text() == dialog.views["model"].answer_text()
    assert "accepted (draft model)" in dialog.speeds["model"].text()
    ratio = model.stats.generation_tps / lookup.stats.generation_tps
    assert dialog.speedup.text().startswith(f"Lookup {lookup.stats.generation_tps:.1f} tok/s")
    assert f"draft model {ratio:.2f}x" in dialog.speedup.text()
    qtbot.waitUntil(dialog.run_button.isEnabled, timeout=10_000)
    dialog.pickers[0].setCurrentIndex(dialog.pickers[0].findData("standard"))
    assert dialog.speedup.text() == ""  # it named lookup, no longer a side
    dialog.close()
    dialog.parent().compare()  # the next Compare opens on the sides last run (they went back to the defaults)
    again = dialog.parent().compare_dialog
    assert again.sides == ("lookup", "model") and [p.currentData() for p in again.pickers] == ["lookup", "model"]
    again.close()


def test_the_pickers_offer_only_the_drafters_the_pair_can_run(make_window, qtbot) -> None:
    """Issue 32: Compare offered the MTP heads to a target that ships none, only to answer with an error naming
    CLI flags ("--drafter model"); a pair with a draft model offers lookup, the draft model and both, not a head."""
    dialog = _open_compare(make_window, qtbot, max_tokens=20)
    for picker in dialog.pickers:
        offered = [picker.itemData(i) for i in range(picker.count())]
        assert offered == ["standard", "auto", "model", "lookup", "model+lookup"]
    qtbot.waitUntil(dialog.run_button.isEnabled, timeout=60_000)
    dialog.close()


def test_one_way_against_itself_is_refused_in_one_line(make_window, qtbot) -> None:
    dialog = _open_compare(make_window, qtbot, max_tokens=20)
    before = dict(dialog.request_ids)
    _pick_and_run(qtbot, dialog, "lookup", "lookup")
    assert dialog.speedup.text() == "Both sides are lookup: choose two different ways to compare."
    assert dialog.request_ids == before and dialog.run_button.isEnabled()
    dialog.close()


def test_on_a_small_screen_the_dialog_fits_with_its_buttons(make_window, qtbot) -> None:
    """Issue 32: at 980x600 with two 320 px columns the dialog ran off a 900x600 screen's right and bottom edges,
    cutting the sides' lines and the Run and Close buttons (the tests' screen is 800x600)."""
    dialog = _open_compare(make_window, qtbot, max_tokens=20)
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    room = dialog.screen().availableGeometry().size()
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.width() <= room.width() and dialog.height() <= room.height() - 40
    assert dialog.minimumSizeHint().height() <= dialog.height() and dialog.minimumSizeHint().width() <= dialog.width()
    assert dialog.run_button.mapTo(dialog, dialog.run_button.rect().bottomRight()).y() < dialog.height()
    dialog.close()
