"""Test helpers: a scripted model, event collection, and a chi-square test without scipy."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mlx.core as mx
import numpy as np

from engine.decoding.hidden_states import LayerTap, forward_with_taps
from engine.events import GenerationResult, RoundEvent, TokenEvent
from engine.models.loading import LoadedModel

if TYPE_CHECKING:
    from engine.decoding.pair import ModelPair
    from engine.params import GenerationParams


class ScriptedModel:
    """A stand-in for an mlx-lm model that always predicts a fixed script after the prompt.

    At absolute position t (t + 1 >= prompt_length) its logits put all mass on script[t + 1 - prompt_length]
    (the last script token repeats). It keeps a real mlx-lm KVCache, so trimming and prefix reuse behave as
    for a real model, and it can be target or draft. With `recurrent`, a second layer keeps a state as SSM
    layers do (an ArraysCache holding a checksum of every id fed, in order), which cannot drop tokens.
    """

    def __init__(self, script: Sequence[int], prompt_length: int, vocab_size: int, recurrent: bool = False) -> None:
        self.script = list(script)
        self.prompt_length = prompt_length
        self.vocab_size = vocab_size
        self.recurrent = recurrent
        self.layers = [None]  # make_prompt_cache makes one KVCache per layer
        self.calls: list[int] = []  # input lengths, to check what was recomputed

    def make_cache(self) -> list:
        from mlx_lm.models.cache import ArraysCache, KVCache

        return [KVCache(), ArraysCache(1)] if self.recurrent else [KVCache()]

    def __call__(self, inputs: mx.array, cache: list) -> mx.array:
        length = inputs.shape[1]
        self.calls.append(length)
        dummy = mx.zeros((1, 1, length, 1))
        cache[0].update_and_fetch(dummy, dummy)
        if self.recurrent:
            cache[1][0] = mx.array(checksum(inputs[0].tolist(), cache[1][0]))
        end = cache[0].offset
        rows = []
        for t in range(end - length, end):
            index = min(max(t + 1 - self.prompt_length, 0), len(self.script) - 1)
            rows.append(self.script[index])
        return mx.where(mx.arange(self.vocab_size)[None, :] == mx.array(rows)[:, None], 30.0, 0.0)[None]


def checksum(ids: list[int], previous: mx.array | None = None) -> int:
    """The recurrent state ScriptedModel keeps: a rolling checksum of the ids fed so far, in order."""
    state = 0 if previous is None else int(previous.item())
    for token in ids:
        state = (state * 31 + token + 1) % 1_000_003
    return state


def scripted(base: LoadedModel, script: Sequence[int], prompt_length: int, name: str = "scripted") -> LoadedModel:
    """A LoadedModel that shares `base`'s tokenizer and config but generates `script`."""
    vocab = len(base.tokenizer)
    return LoadedModel(name, Path(name), ScriptedModel(script, prompt_length, vocab), base.tokenizer, dict(base.config))


def split_events(events: Iterable[object]) -> tuple[list[TokenEvent], list[RoundEvent], GenerationResult]:
    tokens, rounds, result = [], [], None
    for e in events:
        if isinstance(e, TokenEvent):
            tokens.append(e)
        elif isinstance(e, RoundEvent):
            rounds.append(e)
        elif isinstance(e, GenerationResult):
            result = e
    assert result is not None
    return tokens, rounds, result


def chi_square_critical(df: int, z: float = 3.09) -> float:
    """Upper critical value of the chi-square distribution (Wilson-Hilferty); z = 3.09 is alpha = 0.001."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def chi_square(observed: Counter, expected_probs: dict[int, float], n: int, min_expected: float = 5.0) -> tuple[float, int]:
    """Goodness-of-fit statistic and degrees of freedom, pooling categories expected fewer than 5 times."""
    stat, df, pooled_obs, pooled_exp = 0.0, -1, 0, 0.0
    for key, p in expected_probs.items():
        e = p * n
        if e < min_expected:
            pooled_obs += observed.get(key, 0)
            pooled_exp += e
            continue
        stat += (observed.get(key, 0) - e) ** 2 / e
        df += 1
    outside = n - sum(observed.get(k, 0) for k in expected_probs)
    pooled_obs += outside
    if pooled_exp >= min_expected:
        stat += (pooled_obs - pooled_exp) ** 2 / pooled_exp
        df += 1
    elif pooled_obs > 3 * min_expected:
        stat += float("inf")  # mass where the target puts (almost) none
    return stat, max(df, 1)


def next_token_law(pair: ModelPair, context: list[int], params: GenerationParams) -> np.ndarray:
    """The target's warped distribution after `context`, computed directly from one forward pass."""
    from engine.decoding.cached_model import CachedModel
    from engine.decoding.sampling import Warper

    logits = CachedModel(pair.target.model).forward(mx.array(context, dtype=mx.uint32), ids=list(context))[-1:]
    return np.exp(np.array(Warper(params, pair.vocab_width).logprobs(logits)[0], dtype=np.float64))


def first_two_token_laws(pair: ModelPair, prompt_ids: list[int], params: GenerationParams) -> tuple[np.ndarray, np.ndarray]:
    """p(x1 | prompt) and the second token's marginal sum_x1 p(x1) p(x2 | x1), which covers drafts accepted after an
    accepted draft, corrections and bonus tokens. An answer that drew EOS first ends: its second token is EOS too."""
    eos = set(pair.tokenizer.eos_token_ids)
    p1 = next_token_law(pair, prompt_ids, params)
    p2 = np.zeros_like(p1)
    for x1 in np.nonzero(p1 > 1e-4)[0]:
        if int(x1) in eos:
            p2[x1] += p1[x1]
        else:
            p2 += p1[x1] * next_token_law(pair, prompt_ids + [int(x1)], params)
    return p1, p2


def assert_first_two_tokens_follow(answers: Sequence[list[int]], laws: tuple, eos: int) -> None:
    """Chi-square tests of the answers' first and second tokens against `laws` (an answer that ended drew `eos`)."""
    firsts = Counter(tokens[0] if tokens else eos for tokens in answers)
    seconds = Counter((tokens + [eos, eos])[1] for tokens in answers)
    for observed, expected in zip((firsts, seconds), laws):
        stat, df = chi_square(observed, dict(enumerate(expected)), len(answers))
        assert stat < chi_square_critical(df), (stat, df)


def independent_answers(
    pair: ModelPair, prompt_ids: list[int], params: GenerationParams, count: int,
    vary: Callable[[int], GenerationParams] | None = None,
) -> list[GenerationResult]:
    """`count` answers to the same prompt, each from the same state: a finished answer joins the pair's history
    (lookup's saved-chat index), so without forgetting it each draw would see the ones before it, and indexing a
    history grown by a thousand answers cost more than the answers (`vary(i)`: answer i's own params)."""
    from engine.decoding.generation import generate

    results = []
    for i in range(count):
        pair.forget_history()
        results.append(generate(prompt_ids, pair, vary(i) if vary else params))
    return results


def assert_sampling_is_exact(pair: ModelPair, params: GenerationParams, answers: int, prompt: str = "abcabd") -> None:
    """`answers` answers at `params` (a drafter, T > 0, a couple of tokens): the drafter's drafts are partly accepted,
    and the answers' first two tokens follow the target's own distributions.

    Each caller passes the smallest sample whose chi-square test still fails, with probability 0.95 or more at
    alpha = 0.001, on the subtlest bug of the verify rule it was tried against: a correction drawn from p rather than
    the residual norm(max(0, p - q)). The per-answer noncentrality each docstring states was measured under that
    bug, from the first token's chi-square over 1500 answers; a drafter whose q is not the law its tokens were drawn
    from (wrong position, unwarped, unmapped ids) moves the output further than that."""
    prompt_ids = pair.prompt_ids(prompt)
    laws = first_two_token_laws(pair, prompt_ids, params)
    mx.random.seed(2024)
    results = independent_answers(pair, prompt_ids, params, answers)
    drafted, accepted = sum(r.stats.drafted for r in results), sum(r.stats.accepted for r in results)
    assert 0 < accepted < drafted
    assert_first_two_tokens_follow([r.tokens for r in results], laws, *pair.tokenizer.eos_token_ids)


def two_turns(pair: ModelPair, params: GenerationParams) -> list[GenerationResult]:
    """Two turns of a chat: a first answer, then an answer to a follow-up that quotes it."""
    from engine.decoding.generation import generate

    first = [{"role": "user", "content": "abcabd"}]
    reply = generate(first, pair, params)
    second = first + [{"role": "assistant", "content": reply.text}, {"role": "user", "content": "gfe"}]
    return [reply, generate(second, pair, params)]


def rounds_with_contexts(pair: ModelPair, prompts: list, params: GenerationParams) -> list[tuple[list[int], list[int]]]:
    """(context, draft ids) of every drafted round of answers to `prompts` (texts or token ids) in turn, on one pair."""
    from engine.decoding.generation import generate_stream

    rounds = []
    for prompt in prompts:
        context = list(prompt) if isinstance(prompt, list) else pair.prompt_ids(prompt)
        for event in generate_stream(pair, prompt, params):
            if isinstance(event, RoundEvent):
                if event.drafted:
                    rounds.append((list(context), list(event.draft)))
                context += list(event.draft[: event.accepted]) + [event.next_token]
    return rounds


def assert_turns_are_standard_decodings(pair: ModelPair, target: LoadedModel, greedy: GenerationParams,
                                        ks: Sequence[int]) -> None:
    """Two greedy turns drafted at each fixed K of `ks`, then under the adaptive policy, are token-identical to
    standard decoding's, with drafts partly accepted at every K (so rollbacks ran)."""
    from engine.decoding.pair import ModelPair

    expected = [answer.tokens for answer in two_turns(ModelPair(target), greedy.replace(mode="standard"))]
    assert all(len(set(tokens)) >= 3 for tokens in expected)  # the answers do not collapse to one letter
    for k in ks:
        answers = two_turns(pair, greedy.replace(num_draft=k, adaptive=False))
        assert [answer.tokens for answer in answers] == expected, k
        drafted, accepted = sum(a.stats.drafted for a in answers), sum(a.stats.accepted for a in answers)
        assert 0 < accepted < drafted, k  # partial accepts: rollbacks ran
    assert [answer.tokens for answer in two_turns(pair, greedy)] == expected  # the adaptive policy's cut


def assert_a_regenerate_and_a_gap_keep_the_output(pair: ModelPair, target: LoadedModel, fixed: GenerationParams) -> None:
    """A Regenerate, an answer the drafter does not hear (standard decoding) and an edit after it keep the output
    standard decoding's, and the drafter still drafts, right at times."""
    from engine.decoding.generation import generate
    from engine.decoding.pair import ModelPair

    standard = fixed.replace(mode="standard")
    expected = generate("abcabd", ModelPair(target), standard).tokens
    first = generate("abcabd", pair, fixed)
    again = generate("abcabd", pair, fixed)  # Regenerate: the drafter holds positions past the prompt
    between = generate("abcabd", pair, standard)  # an answer the drafter does not hear
    after = generate("abcabdgfe", pair, fixed)  # an edit after that gap
    assert first.tokens == again.tokens == between.tokens == expected
    assert after.tokens == generate("abcabdgfe", ModelPair(target), standard).tokens
    assert again.stats.accepted > 0 and after.stats.accepted > 0


def recorded_head_rounds(pair: ModelPair, runner, monkeypatch, prompts: list[str], params: GenerationParams) -> list[tuple]:
    """(context, draft ids, draft logits (K, V)) of every round a drafter on `MTPDrafter`'s loop (the MTP head,
    EAGLE-3; `runner` its state's runner) drafted, over answers to `prompts`: what the parity tests compare."""
    from engine.decoding.drafting.mtp import MTPDrafter
    from engine.decoding.generation import generate

    rounds: list[tuple] = []
    logits_of = runner.logits
    seen: list[mx.array] = []
    runner.logits = lambda outputs: seen.append(logits_of(outputs)) or seen[-1]
    propose = MTPDrafter.propose

    def recording(self: MTPDrafter, context: list[int], limit: int, split_pass: bool = False):
        first = len(seen)
        draft = propose(self, context, limit, split_pass)
        if draft.count:
            rounds.append((list(context), draft.tokens, lambda first=first, n=draft.count: seen[first : first + n]))
        return draft

    monkeypatch.setattr(MTPDrafter, "propose", recording)
    for prompt in prompts:
        generate(prompt, pair, params)
    return [(context, tokens.tolist(), mx.concatenate(rows(), axis=0)) for context, tokens, rows in rounds]


def registered(row: Any, files: dict[str, str], tmp_path: Path, monkeypatch: Any) -> None:
    """Register the drafter kind `row` with its files (name: text) in a package of their own on the path, as a new
    kind would be (take it out of `drafter_kinds.KINDS` afterwards)."""
    from engine import drafter_kinds

    package = tmp_path / "code" / row.round.split(".")[0]
    package.mkdir(parents=True)
    for name, text in {"__init__.py": "", **files}.items():
        (package / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    drafter_kinds.register(row)


def agent_request(name: str) -> list[dict]:
    """An agent's request: a long system prompt of its own (Claude Code's main loop, its title request), a question.
    Alternating two of them is what thrashed a prompt cache with one prefix."""
    system = " ".join(f"{name} rule {i}: answer briefly." for i in range(12))
    return [{"role": "system", "content": system}, {"role": "user", "content": "Go on."}]


def tapped_pass(target: Any, layer_ids: Sequence[int]) -> Callable[[mx.array, Any], tuple[mx.array, mx.array]]:
    """The target's pass over (ids, cache) returning its logits and the outputs of `layer_ids`, concatenated
    (1, L, n_taps * H): what a DFlash or DSpark drafter is fed, read through the engine's one tap mechanism."""
    taps = [LayerTap(layer) for layer in layer_ids]

    def run(ids: mx.array, cache: Any) -> tuple[mx.array, mx.array]:
        logits, states = forward_with_taps(target, ids, cache, taps)
        return logits, mx.concatenate(states, axis=-1)

    return run
