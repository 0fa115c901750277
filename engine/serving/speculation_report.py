"""The `speculation` object every API adds to its response, beside its own usage: what speculation did.

OpenAI's and Anthropic's clients ignore fields they do not know, so chat completions, Anthropic Messages and
Responses all carry the same object (llama.cpp's draft_n / draft_n_accepted, and more), and a script reads it
the same way whichever API it speaks.
"""

from __future__ import annotations

from typing import Any

from ..events import GenerationResult, PolicyBelief


def speculation(result: GenerationResult, drafter: str) -> dict[str, Any]:
    """What speculation did for this response (llama.cpp's draft_n / draft_n_accepted, and more)."""
    s = result.stats
    return {
        "mode": result.mode,
        "drafter": drafter if result.mode == "speculative" else "none",
        "drafted_by": dict(s.drafted_by),  # the drafters that drafted, by tokens verified ("model+lookup": both)
        "rounds": s.rounds,
        "drafted": s.drafted,
        "accepted": s.accepted,
        "acceptance_rate": round(s.acceptance_rate, 4),
        "tokens_per_pass": round(s.tokens_per_pass, 4),
        "tokens_per_second": round(s.generation_tps, 2),
        "cached_prompt_tokens": s.cached_prompt_tokens,
        "fanout_hit_rate": s.fanout_hit_rate,
        "lossy": result.lossy,
        "lenience": result.lenience,
        "policy": [policy_belief(b) for b in s.policy],
    }


def policy_belief(belief: PolicyBelief) -> dict[str, Any]:
    """The adaptive policy's belief about one drafter: estimates, predictions per K, and why it drafts or not."""
    return {
        "drafter": belief.drafter,
        "acceptance": round(belief.acceptance, 4),
        "draft_cost_steps": None if belief.draft_cost_steps is None else round(belief.draft_cost_steps, 4),
        "predicted_tps": [round(x, 2) for x in belief.predicted_tps],
        "chosen_k": belief.chosen_k,
        "reason": belief.reason,
        "rounds_since_draft": belief.rounds_since_draft,
        "verified_tokens": belief.verified_tokens,
    }
