"""The benchmark: alternating modes in one process, paired ratios, and mlx-lm as a reference."""

from __future__ import annotations

import pytest

from engine.cli.benchmark import Run, check_modes, format_table, measure_follow_up, run_benchmark, summarize
from engine.decoding.pair import ModelPair
from engine.params import GenerationParams

GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=12, num_draft=3)


def test_modes_run_alternating_with_standard_first(tiny_pair: ModelPair) -> None:
    order = []
    prompts = [tiny_pair.prompt_ids("Hello"), tiny_pair.prompt_ids("def f(x):")]
    runs = run_benchmark(tiny_pair, prompts, ["standard", "speculative", "prompt-lookup"], GREEDY, 2, on_run=order.append)
    assert [(r.iteration, r.prompt_index, r.mode) for r in order] == [
        (i, p, m) for i in range(2) for p in range(2) for m in ("standard", "speculative", "prompt-lookup")
    ]
    assert all(r.identical_to_standard for r in runs)


def test_the_automatic_mode_runs_with_or_without_a_draft_model_and_keeps_the_output(tiny_pair: ModelPair) -> None:
    assert check_modes(["automatic"], has_draft=False) == ["standard", "automatic"]
    prompts = [tiny_pair.prompt_ids("Hello"), tiny_pair.prompt_ids("Repeat: a b c d a b c d a b c")]
    for pair in (tiny_pair, ModelPair(tiny_pair.target)):
        runs = run_benchmark(pair, prompts, ["standard", "automatic"], GREEDY.replace(max_tokens=24))
        assert all(r.identical_to_standard for r in runs)


def test_mlx_lm_references_produce_the_same_greedy_tokens(tiny_pair: ModelPair) -> None:
    runs = run_benchmark(tiny_pair, [tiny_pair.prompt_ids("Hello")], ["standard", "mlx-lm-standard", "mlx-lm-speculative"], GREEDY)
    assert all(r.identical_to_standard for r in runs)
    assert {r.tokens for r in runs} == {12}
    spec = next(r for r in runs if r.mode == "mlx-lm-speculative")
    assert spec.tokens_per_pass > 1.0 and spec.acceptance_rate is not None


def test_summary_uses_paired_ratios() -> None:
    runs = [Run("standard", 0, 0, 10, 10.0, None, 1.0, True), Run("standard", 1, 0, 10, 20.0, None, 1.0, True),
            Run("speculative", 0, 0, 10, 15.0, 0.5, 2.0, True), Run("speculative", 1, 0, 10, 20.0, 0.7, 2.5, False),
            Run("mlx-lm-speculative", 0, 0, 10, 10.0, 0.3, 1.5, True), Run("mlx-lm-speculative", 1, 0, 10, 10.0, 0.3, 1.5, True)]
    s = summarize(runs)
    assert s["speculative"]["speedup_vs_standard"] == pytest.approx((1.5 + 1.0) / 2)
    assert s["speculative"]["ratio_vs_mlx_lm"] == pytest.approx((1.5 + 2.0) / 2)
    assert s["speculative"]["acceptance_rate"] == pytest.approx(0.6)
    assert s["speculative"]["identical_to_standard"] is False
    assert s["standard"]["ratio_vs_mlx_lm"] is None
    assert "speculative" in format_table(s) and "NO" in format_table(s)


def test_runs_too_short_to_time_are_left_out_and_counted() -> None:
    """A sampled EOS first gave 0 tokens at 0 tok/s, and the averages read speculation as halving tokens per pass."""
    runs = [Run("standard", 0, 0, 0, 0.0, None, 0.0, None), Run("standard", 1, 0, 10, 20.0, None, 1.0, None),
            Run("speculative", 0, 0, 0, 0.0, None, 0.0, None), Run("speculative", 1, 0, 10, 10.0, 0.5, 2.0, None)]
    s = summarize(runs)
    assert s["speculative"]["tokens_per_pass"] == 2.0 and s["speculative"]["median_tps"] == 10.0
    assert s["speculative"]["speedup_vs_standard"] == pytest.approx(0.5)
    assert s["speculative"]["untimed_runs"] == 1
    assert "left out, too short to time: 1 run(s) of standard, 1 run(s) of speculative" in format_table(s)


def test_check_modes() -> None:
    assert check_modes(["speculative", "standard", "speculative"], has_draft=True) == ["standard", "speculative"]
    with pytest.raises(ValueError, match="Unknown benchmark mode"):
        check_modes(["fast"], has_draft=True)
    with pytest.raises(ValueError, match="needs a draft model"):
        check_modes(["adaptive"], has_draft=False)
    assert check_modes(["prompt-lookup"], has_draft=False) == ["standard", "prompt-lookup"]


def test_a_follow_up_turn_finds_the_first_turn_in_the_prompt_cache(tiny_pair: ModelPair) -> None:
    timing = measure_follow_up(tiny_pair, "Summarise: " + "the cat sat on the mat. " * 20, "Shorter?", GREEDY)
    first_turn_tokens = len(tiny_pair.prompt_ids("Summarise: " + "the cat sat on the mat. " * 20))
    assert first_turn_tokens <= timing.second_turn_cached_tokens < timing.second_turn_prompt_tokens


def test_the_lenient_mode_runs_lossy_at_its_lenience_and_only_it(tiny_pair: ModelPair) -> None:
    from engine.cli.benchmark import mode_params

    params = GREEDY.replace(temperature=1.0, seed=3, lenience=0.3)
    assert mode_params("lenient", params).lenience == 0.3 and mode_params("speculative", params).lenience == 0.0
    assert mode_params("lenient", GREEDY).lenience == 0.5  # the default when --lenience is not given
    runs = run_benchmark(tiny_pair, [tiny_pair.prompt_ids("Hello")], ["speculative", "lenient"], params.replace(lenience=1.0))
    summary = summarize(runs)
    assert summary["lenient"]["acceptance_rate"] == 1.0 > summary["speculative"]["acceptance_rate"]
    summary["lenient"].update(lossy=True, lenience=1.0)  # as `specchat-cli benchmark` labels it
    assert "lenient (LOSSY 1)" in format_table(summary)
