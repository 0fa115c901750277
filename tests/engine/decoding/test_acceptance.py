"""The acceptance rule is exact: every emitted token is distributed as the target alone would emit it."""

from __future__ import annotations

from collections import Counter

import mlx.core as mx
import numpy as np
import pytest

from engine.decoding.acceptance import (
    acceptance_probabilities,
    lenient_output,
    point_mass,
    ratio,
    residual_distribution,
    verify_greedy,
    verify_sampled,
)
from tests.helpers import chi_square, chi_square_critical


def _distribution(rng: np.random.Generator, size: int, zeros: int = 0) -> np.ndarray:
    x = rng.random(size) ** 3
    x[rng.choice(size, zeros, replace=False)] = 0.0
    return x / x.sum()


def one_step_output(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The distribution of the first emitted token, computed from the rule's own pieces:
    sum over draft tokens d ~ q of [accept(d) * onehot(d) + (1 - accept(d)) * residual]."""
    vocab = len(p)
    d = mx.arange(vocab)
    p_rows = mx.broadcast_to(mx.array(p, dtype=mx.float32), (vocab, vocab))
    q_rows = mx.broadcast_to(mx.array(q, dtype=mx.float32), (vocab, vocab))
    accept = np.array(acceptance_probabilities(p_rows, q_rows, d))
    residual = np.array(residual_distribution(mx.array(p, dtype=mx.float32), mx.array(q, dtype=mx.float32)))
    out = np.zeros(vocab)
    for token in range(vocab):
        if q[token] == 0:
            continue
        out += q[token] * (accept[token] * np.eye(vocab)[token] + (1 - accept[token]) * residual)
    return out


def decided(verdict) -> tuple:  # acceptance.Verdict
    return verdict.accepted, verdict.next_token


@pytest.mark.parametrize("seed", range(6))
def test_one_verify_step_emits_exactly_the_target_distribution(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Zeros in q where p has mass (the residual must supply it) and zeros in p where q has mass.
    p = _distribution(rng, 8, zeros=seed % 3)
    q = _distribution(rng, 8, zeros=(seed + 1) % 3)
    np.testing.assert_allclose(one_step_output(p, q), p, atol=1e-6)


def test_identical_distributions_accept_everything_and_never_need_a_residual() -> None:
    p = np.array([0.5, 0.3, 0.2])
    rows = mx.array(np.stack([p, p, p]))
    accept = acceptance_probabilities(rows, rows, mx.arange(3))
    assert np.array(accept).tolist() == [1.0, 1.0, 1.0]
    # With no positive residual mass, the residual falls back to p instead of dividing by zero.
    np.testing.assert_allclose(np.array(residual_distribution(mx.array(p), mx.array(p))), p, atol=1e-7)


def _sample_first_tokens(p: np.ndarray, q: np.ndarray, n: int, seed: int) -> tuple[Counter, int]:
    mx.random.seed(seed)
    target_logprobs = mx.log(mx.array(np.stack([p, p]), dtype=mx.float32))
    log_q = mx.log(mx.array(q, dtype=mx.float32))
    q_rows = mx.array(q[None, :], dtype=mx.float32)
    counts: Counter = Counter()
    accepted = 0
    for _ in range(n):
        draft = mx.random.categorical(log_q)[None].astype(mx.uint32)
        k, token = decided(verify_sampled(target_logprobs, q_rows, draft))
        k, token, draft_token = int(k.item()), int(token.item()), int(draft.item())
        counts[draft_token if k == 1 else token] += 1
        accepted += k
    return counts, accepted


@pytest.mark.statistical
def test_monte_carlo_rejection_sampling_matches_the_target() -> None:
    """Sample size: the subtlest wrong rule, a rejected draft replaced from p rather than from norm(max(p - q, 0)),
    is off by 0.119 per sample in chi-square (5 degrees of freedom, alpha 0.001): 400 samples catch it 99 times
    in 100, the 1000 here essentially always (noncentrality 119)."""
    p = np.array([0.40, 0.25, 0.15, 0.10, 0.06, 0.04])
    q = np.array([0.05, 0.10, 0.40, 0.05, 0.30, 0.10])  # a poor draft: most of its mass where p has little
    n = 1000
    counts, accepted = _sample_first_tokens(p, q, n, seed=1234)

    stat, df = chi_square(counts, dict(enumerate(p)), n)
    assert stat < chi_square_critical(df), (stat, df, counts)
    # The test has power: the draft's own samples (what accepting everything would emit) fail it.
    mx.random.seed(99)
    draft_only = Counter(int(t) for t in np.array(mx.random.categorical(mx.log(mx.array(q)), shape=(n,))))
    assert chi_square(draft_only, dict(enumerate(p)), n)[0] > chi_square_critical(df)

    # Acceptance is sum(min(p, q)), not sample-and-match's sum(p * q).
    rate = accepted / n
    exact, match = np.minimum(p, q).sum(), (p * q).sum()
    assert abs(rate - exact) < 4 * np.sqrt(exact * (1 - exact) / n)
    assert rate > match + 0.1


def test_rejection_emits_from_the_residual_not_the_rejected_token() -> None:
    """A point-mass draft (prompt lookup) on a token the target never emits is always replaced."""
    mx.random.seed(0)
    p = mx.log(mx.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]]))
    draft = mx.array([0], dtype=mx.uint32)
    for _ in range(50):
        k, token = decided(verify_sampled(p, point_mass(draft, 3), draft))
        assert int(k.item()) == 0 and int(token.item()) in (1, 2)


def test_point_mass_accepts_with_the_target_probability_of_the_proposal() -> None:
    p = mx.array([[0.1, 0.7, 0.2]])
    draft = mx.array([1], dtype=mx.uint32)
    q = point_mass(draft, 3)
    assert np.array(q).tolist() == [[0.0, 1.0, 0.0]]
    assert float(acceptance_probabilities(p, q, draft)[0]) == pytest.approx(0.7)
    np.testing.assert_allclose(np.array(residual_distribution(p[0], q[0])), [1 / 3, 0.0, 2 / 3], atol=1e-6)


def test_full_acceptance_draws_the_bonus_from_the_last_position() -> None:
    mx.random.seed(3)
    p = mx.log(mx.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))
    draft = mx.array([1, 2], dtype=mx.uint32)
    k, token = decided(verify_sampled(p, point_mass(draft, 3), draft))
    assert (int(k.item()), int(token.item())) == (2, 0)


def test_no_draft_samples_the_target_directly() -> None:
    mx.random.seed(5)
    p = mx.log(mx.array([[0.0, 0.0, 1.0]]))
    k, token = decided(verify_sampled(p, mx.zeros((0, 3)), mx.array([], dtype=mx.uint32)))
    assert (int(k.item()), int(token.item())) == (0, 2)


@pytest.mark.parametrize(
    "choices, draft, expected",
    [
        ([3, 5, 7, 2], [3, 5, 1], (2, 7)),  # first mismatch at the third token: corrected with argmax there
        ([3, 5, 7, 2], [3, 5, 7], (3, 2)),  # all accepted: the bonus is the argmax after the last draft token
        ([3, 5, 7, 2], [4, 5, 7], (0, 3)),  # later matches after a mismatch do not count
        ([9], [], (0, 9)),  # nothing drafted: a plain greedy step
    ],
)
def test_greedy_accepts_the_longest_prefix_matching_the_target_argmax(choices, draft, expected) -> None:
    k, token = decided(verify_greedy(mx.array(choices, dtype=mx.uint32), mx.array(draft, dtype=mx.uint32)))
    assert (int(k.item()), int(token.item())) == expected


# --- lenient acceptance (lossy, seed 002's --delta) ---------------------------------------------------------


def _draws(lenience: float | None, seed: int, n: int = 300) -> list[tuple[int, int]]:
    """(accepted, next token) of n verify steps at a fixed seed, K = 3 drafts from q."""
    rng = np.random.default_rng(0)
    p, q = _distribution(rng, 12), _distribution(rng, 12)
    target = mx.log(mx.array(np.stack([p] * 4), dtype=mx.float32))
    q_rows = mx.array(np.stack([q] * 3), dtype=mx.float32)
    mx.random.seed(seed)
    out = []
    for _ in range(n):
        draft = mx.random.categorical(mx.log(q_rows)).astype(mx.uint32)
        verdict = verify_sampled(target, q_rows, draft) if lenience is None else verify_sampled(target, q_rows, draft, lenience)
        out.append((int(verdict.accepted.item()), int(verdict.next_token.item())))
    return out


def test_lenience_zero_is_the_exact_rule_draw_for_draw() -> None:
    assert _draws(0.0, seed=5) == _draws(None, seed=5)
    assert _draws(0.3, seed=5) != _draws(None, seed=5)  # the comparison can tell rules apart


def test_lenience_one_accepts_every_draft_token_even_where_the_target_has_none() -> None:
    p = np.array([[0.0, 1.0, 0.0]] * 3)
    q = mx.array([[1.0, 0.0, 0.0]] * 2, dtype=mx.float32)
    verdict = verify_sampled(mx.log(mx.array(p, dtype=mx.float32)), q, mx.array([0, 0], dtype=mx.uint32), lenience=1.0)
    assert int(verdict.accepted.item()) == 2
    greedy = verify_greedy(mx.array([1, 1, 1], dtype=mx.uint32), mx.array([0, 2], dtype=mx.uint32), lenience=1.0)
    assert int(greedy.accepted.item()) == 2


def test_greedy_verification_is_unchanged_below_lenience_one() -> None:
    choices, draft = mx.array([4, 5, 6], dtype=mx.uint32), mx.array([4, 9], dtype=mx.uint32)
    assert int(verify_greedy(choices, draft, lenience=0.9).accepted.item()) == 1


def test_the_lenient_ratio_divides_q_by_one_minus_lenience() -> None:
    p_d, q_d = mx.array([0.2, 0.5, 0.0]), mx.array([0.4, 0.4, 0.3])
    np.testing.assert_allclose(np.array(ratio(p_d, q_d, 0.5)), [1.0, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(np.array(ratio(p_d, q_d, 0.2)), [0.625, 1.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_lenient_output_is_the_target_at_zero_and_drifts_more_as_lenience_grows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p, q = mx.array(_distribution(rng, 10)), mx.array(_distribution(rng, 10))
    np.testing.assert_allclose(np.array(lenient_output(p, q, 0.0)), np.array(p), atol=1e-6)
    drift = [0.5 * float(mx.abs(lenient_output(p, q, d) - p).sum()) for d in (0.0, 0.25, 0.5, 0.75, 1.0)]
    assert drift[0] < 1e-6 and all(a <= b + 1e-7 for a, b in zip(drift, drift[1:])) and drift[-1] > 0.05
    np.testing.assert_allclose(np.array(lenient_output(p, q, 1.0)), np.array(q), atol=1e-6)  # δ = 1 emits q


@pytest.mark.statistical
def test_sampling_at_a_lenience_follows_the_lenient_output_not_the_target() -> None:
    """Sample size: the lenient output and the target differ by 0.118 to 0.150 per sample in chi-square (either way
    round, 5 degrees of freedom, alpha 0.001): 400 samples tell them apart 99 times in 100, the 1000 here
    essentially always (noncentrality 118 and more)."""
    p = np.array([0.40, 0.25, 0.15, 0.10, 0.06, 0.04])
    q = np.array([0.05, 0.10, 0.40, 0.05, 0.30, 0.10])
    n, lenience = 1000, 0.4
    mx.random.seed(77)
    target = mx.log(mx.array(np.stack([p, p]), dtype=mx.float32))
    q_rows = mx.array(q[None, :], dtype=mx.float32)
    counts: Counter = Counter()
    for _ in range(n):
        draft = mx.random.categorical(mx.log(q_rows)).astype(mx.uint32)
        verdict = verify_sampled(target, q_rows, draft, lenience)
        counts[int(draft.item()) if int(verdict.accepted.item()) else int(verdict.next_token.item())] += 1
    expected = np.array(lenient_output(mx.array(p, dtype=mx.float32), mx.array(q, dtype=mx.float32), lenience))
    stat, df = chi_square(counts, dict(enumerate(expected)), n)
    assert stat < chi_square_critical(df), (stat, counts)
    assert chi_square(counts, dict(enumerate(p)), n)[0] > chi_square_critical(df)  # lossy: not the target's
