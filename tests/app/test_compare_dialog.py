"""Compare is fair: both runs from an empty prompt cache, in alternating order, with what explains the speedup."""

from __future__ import annotations

from tests.app.conftest import send_and_wait


def test_both_runs_start_from_an_empty_prompt_cache_and_take_turns_going_first(make_window, qtbot) -> None:
    """The speculative run used to reuse the prompt the standard run had just read: its first token came 4x sooner."""
    window = make_window(max_tokens=20)
    send_and_wait(qtbot, window, "Hello")  # the conversation is in the prompt cache now
    orders = []
    for _ in range(2):
        window.compare()
        dialog = window.compare_dialog
        qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
        first, second = dialog.request_ids
        orders.append((first, second))
        assert dialog.request_ids[first] < dialog.request_ids[second]  # sent, and so run, in this order
        standard, speculative = dialog.results["standard"].stats, dialog.results["speculative"].stats
        assert standard.cached_prompt_tokens == 0 and speculative.cached_prompt_tokens == 0
        assert standard.prompt_tokens == speculative.prompt_tokens > 0
        assert f"empty prompt cache; {first} runs first" in dialog.fairness.text()
        assert f"{speculative.tokens_per_pass:.2f} tokens per pass" in dialog.speedup.text()
        assert f"{speculative.acceptance_rate:.0%} of {speculative.drafted} drafted accepted" in dialog.speedup.text()
        dialog.close()
    assert orders == [("standard", "speculative"), ("speculative", "standard")]


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


def test_rejected_drafts_show_in_the_speculative_column(make_window, qtbot) -> None:
    window = make_window(max_tokens=40)
    send_and_wait(qtbot, window, "Hello")
    window.compare()
    dialog = window.compare_dialog
    qtbot.waitUntil(lambda: len(dialog.results) == 2, timeout=60_000)
    assert list(dialog.views["speculative"].ghost_fragments()) and not list(dialog.views["standard"].ghost_fragments())
    dialog.close()
