"""The recommended pairs: every pair of seed 000 and the current ones, with download state and fit."""

from __future__ import annotations

from engine.models.catalog import default_pair, pair_statuses, recommended_pairs


def test_the_catalog_holds_seed_000s_pairs_and_current_ones() -> None:
    names = {(p.draft.split("/")[1], p.target.split("/")[1]) for p in recommended_pairs()}
    for draft, target in [("Qwen2.5-0.5B", "Qwen2.5-7B"), ("Qwen2.5-0.5B", "Qwen2.5-3B"), ("Llama-3.2-1B", "Llama-3.2-3B"),
                          ("SmolLM2-135M", "SmolLM2-1.7B"), ("gemma-2-2b", "gemma-2-9b"), ("Qwen2.5-0.5B", "Qwen2.5-14B"),
                          ("Qwen2.5-0.5B", "Qwen2.5-32B"), ("Llama-3.2-1B", "Meta-Llama-3.1-8B"), ("Qwen2.5-Coder-0.5B", "Qwen2.5-Coder-7B")]:
        assert any(d.startswith(draft) and t.startswith(target) for d, t in names), (draft, target)
    for draft, target in [("Qwen3-0.6B", "Qwen3-8B"), ("Qwen3-0.6B", "Qwen3-32B"), ("gemma-3-1b", "gemma-3-text-27b"),
                          ("Qwen3.5-0.8B", "Qwen3.5-4B")]:
        assert any(d.startswith(draft) and t.startswith(target) for d, t in names), (draft, target)
    for pair in recommended_pairs():
        assert pair.draft.startswith("mlx-community/") and pair.target.startswith("mlx-community/")
        assert pair.memory_gb > pair.download_gb > 0 and 1 <= pair.num_draft <= 8 and pair.use_case
        assert pair.source  # every figure says where it came from
    assert default_pair() in recommended_pairs()


def test_status_shows_download_state_and_fit(isolated_home) -> None:
    statuses = pair_statuses(available_gb=8.0)
    assert len(statuses) == len(recommended_pairs())
    assert not any(s.draft_downloaded or s.target_downloaded for s in statuses)
    fits = {s.pair.id: s.fit.fits for s in statuses}
    assert fits["qwen2.5-0.5b-3b"] and not fits["qwen2.5-0.5b-32b"]
    s = statuses[0]
    assert s.to_download_gb == s.pair.download_gb


def test_short_labels_keep_family_and_size() -> None:
    labels = {p.id: p.short_label for p in recommended_pairs()}
    assert labels["qwen2.5-0.5b-7b"] == "Qwen2.5-0.5B → Qwen2.5-7B"
    assert labels["gemma2-2b-9b"] == "gemma-2-2b → gemma-2-9b"
    assert labels["smollm2-135m-1.7b"] == "SmolLM2-135M → SmolLM2-1.7B"
