"""Parity of our DFlash drafter with z-lab's own MLX backend (PyPI `dflash`, `dflash/model_mlx.py`).

No trained drafter can be downloaded here, so this is the evidence that a published drafter drafts here what it
drafts there: the same random weights in the published format, loaded by both, must give the same logits (max abs
difference under 1e-3 in float32) and the same greedy ids, block by block, over the rounds of the reference's own
`stream_generate`, on a dense (Qwen3) and a hybrid GatedDeltaNet (Qwen3.5) target, for DFlash and DFlash2.
The reference installs with `pip install --no-deps dflash` (the Makefile's install step does); its `load_draft`
wants a hub id, so its `snapshot_download` is patched to hand it the local folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dflash.model_mlx as ref
import mlx.core as mx
import pytest
from mlx_lm import load
from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache

from engine.drafters.dflash import DFlashDrafter, layer_tap, load_dflash
from engine.fixtures.tiny_dflash import build_dflash_pair

PROMPT = "abcab"
TOKENS = 40
TOLERANCE = 1e-3
CASES = [("qwen3", 1, False), ("qwen3", 2, False), ("qwen3_5", 1, False), ("qwen3_5", 2, False), ("qwen3", 1, True)]
IDS = ["dense-dflash", "dense-dflash2", "hybrid-dflash", "hybrid-dflash2", "dense-dflash-sliding"]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dflash")


def reference_draft(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """z-lab's load_draft on a local folder (it only knows hub ids)."""
    monkeypatch.setattr(ref, "snapshot_download", lambda *args, **kwargs: str(folder))
    return ref.load_draft("z-lab/local-test-drafter")


@dataclass
class Recorded:
    """What the reference's drafter saw and proposed in each round of its stream."""

    # (block's first token, its size, the hidden states fed, logits (None for DFlash2), ids)
    calls: list[tuple[int, int, mx.array, mx.array | None, mx.array]] = field(default_factory=list)

    def record_v1(self, original: Any) -> Any:
        def call(draft: Any, block: mx.array, hidden: mx.array, cache: Any, logits_start: int = 0) -> mx.array:
            logits = original(draft, block, hidden, cache, logits_start=logits_start)
            self.calls.append((int(block[0, 0].item()), block.shape[1], hidden, logits[0], mx.argmax(logits[0], axis=-1)))
            return logits
        return call

    def record_v2(self, original: Any) -> Any:
        def propose(draft: Any, block: mx.array, hidden: mx.array, cache: Any, temperature: float, logits_start: int = 0):
            out = original(draft, block, hidden, cache, temperature, logits_start=logits_start)
            self.calls.append((int(block[0, 0].item()), block.shape[1], hidden, None, out[0][0]))
            return out
        return propose


def run_reference(target_dir: Path, drafter_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int], Recorded]:
    """The reference's greedy stream (tokens, tokens per round) with every draft call recorded."""
    model, tokenizer = load(str(target_dir))
    draft = reference_draft(drafter_dir, monkeypatch)
    recorded = Recorded()
    monkeypatch.setattr(ref.DFlashDraftModel, "__call__", recorded.record_v1(ref.DFlashDraftModel.__call__))
    monkeypatch.setattr(ref.DFlash2DraftModel, "propose", recorded.record_v2(ref.DFlash2DraftModel.propose))
    tokens, per_round = [], []
    for response in ref.stream_generate(model, draft, tokenizer, tokenizer.encode(PROMPT), max_tokens=TOKENS):
        tokens += response.tokens
        per_round.append(len(response.tokens))
    return tokens, per_round, recorded


def plain_greedy(model: Any, prompt: list[int], n: int) -> list[int]:
    cache = make_prompt_cache(model)
    logits = model(mx.array([prompt]), cache=cache)
    out: list[int] = []
    for _ in range(n):
        out.append(int(mx.argmax(logits[0, -1]).item()))
        logits = model(mx.array([out[-1:]]), cache=cache)
    return out


@pytest.mark.parametrize("kind, version, sliding", CASES, ids=IDS)
def test_our_drafter_drafts_what_the_reference_drafted_in_each_round_of_its_stream(
    root: Path, monkeypatch: pytest.MonkeyPatch, kind: str, version: int, sliding: bool
) -> None:
    target_dir, drafter_dir = build_dflash_pair(root, kind, version, sliding)
    tokens, per_round, recorded = run_reference(target_dir, drafter_dir, monkeypatch)
    target, tokenizer = load(str(target_dir))
    assert tokens == plain_greedy(target, tokenizer.encode(PROMPT), TOKENS)  # the reference is exact here
    assert max(per_round) >= 2 and len(recorded.calls) >= 10  # rounds that accepted drafts, and many rounds
    ours = DFlashDrafter(load_dflash(drafter_dir), target)
    worst = 0.0
    for last, size, hidden, logits, ids in recorded.calls:
        block = ours.draft(last, hidden, block_size=size)
        assert block.ids.tolist() == ids.tolist()
        if logits is not None:
            worst = max(worst, mx.max(mx.abs(block.logits - logits)).item())
    assert worst < TOLERANCE


@pytest.mark.parametrize("version", [1, 2])
def test_draft_logits_match_the_reference_on_random_hidden_states(root: Path, monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    target_dir, drafter_dir = build_dflash_pair(root, "qwen3", version)
    target, _ = load(str(target_dir))
    theirs = reference_draft(drafter_dir, monkeypatch).bind(target)
    ours = DFlashDrafter(load_dflash(drafter_dir), target)
    their_cache = theirs.make_cache()
    mx.random.seed(3)
    for length, last in ((7, 1), (3, 4), (5, 2)):  # the cache grows as rounds feed it
        hidden = mx.random.normal((1, length, 2 * 64))
        block = mx.array([[last] + [theirs.config.mask_token_id] * 15])
        expected = theirs.compute_logits(theirs.hidden_states(block, hidden, their_cache, logits_start=1))[0]
        got = ours.draft(last, hidden)
        assert mx.max(mx.abs(got.logits - expected)).item() < TOLERANCE
    assert ours.length == 15


@pytest.mark.parametrize("kind", ["qwen3", "qwen3_5"])
def test_our_tap_gives_the_reference_its_hidden_states(root: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Each tapped layer's output, concatenated: what the reference fed its drafter for the prompt."""
    target_dir, drafter_dir = build_dflash_pair(root, kind)
    _, _, recorded = run_reference(target_dir, drafter_dir, monkeypatch)
    target, tokenizer = load(str(target_dir))
    _, taps = layer_tap(target, (0, 2))(mx.array([tokenizer.encode(PROMPT)]), make_prompt_cache(target))
    assert mx.max(mx.abs(taps - recorded.calls[0][2])).item() < 1e-5


def greedy_dflash(target_dir: Path, drafter_dir: Path) -> tuple[list[int], list[list[int]]]:
    """Our drafter and our tap in the reference's greedy loop (the target rolled back by trimming, or for a
    recurrent one by prefilling the accepted context again): the stream and every block's ids."""
    target, tokenizer = load(str(target_dir))
    drafter = DFlashDrafter(load_dflash(drafter_dir), target)
    tap = layer_tap(target, drafter.config.target_layer_ids)
    prompt = tokenizer.encode(PROMPT)
    cache = make_prompt_cache(target)
    logits, hidden = tap(mx.array([prompt]), cache)
    tokens, blocks = [int(mx.argmax(logits[0, -1]).item())], []
    while len(tokens) < TOKENS:
        size = min(drafter.config.block_size, TOKENS - len(tokens) + 1)  # the reference's last block is shorter
        block = drafter.draft(tokens[-1], hidden, block_size=size).ids.tolist()
        blocks.append(block)
        logits, hidden = tap(mx.array([tokens[-1:] + block]), cache)
        choices = mx.argmax(logits[0], axis=-1).tolist()
        accepted = next((i for i, (d, t) in enumerate(zip(block, choices)) if d != t), len(block))
        tokens += (block[:accepted] + [choices[accepted]])[: TOKENS - len(tokens)]
        hidden = hidden[:, : accepted + 1]
        if can_trim_prompt_cache(cache):
            cache_trim(cache, len(block) - accepted)
        else:
            cache = make_prompt_cache(target)
            tap(mx.array([prompt + tokens[:-1]]), cache)
    return tokens, blocks


def cache_trim(cache: list[Any], n: int) -> None:
    for layer in cache:
        layer.trim(n)


def test_our_drafter_and_tap_in_the_greedy_loop_reproduce_the_reference_stream(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for kind in ("qwen3", "qwen3_5"):
        target_dir, drafter_dir = build_dflash_pair(root, kind, 2)
        tokens, _, recorded = run_reference(target_dir, drafter_dir, monkeypatch)
        ours, blocks = greedy_dflash(target_dir, drafter_dir)
        assert ours == tokens
        assert blocks == [ids.tolist() for *_, ids in recorded.calls]
