"""Parity of our DFlash drafter with z-lab's own MLX backend (PyPI `dflash`, `dflash/model_mlx.py`).

No trained drafter can be downloaded here, so this is the evidence that a published drafter drafts here what it
drafts there: the same random weights in the published format, loaded by both, must give the same logits (max abs
difference under 1e-3 in float32) and the same greedy ids, block by block, over the rounds of the reference's own
`stream_generate`, on a dense (Qwen3) and a hybrid GatedDeltaNet (Qwen3.5) target, for DFlash and DFlash2.
The reference installs with `pip install --no-deps dflash` (the Makefile's install step does); its `load_draft`
wants a hub id, so its `snapshot_download` is patched to hand it the local folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dflash.model_mlx as ref
import mlx.core as mx
import pytest
from mlx_lm import load
from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache

from engine.drafters.dflash import DFlashRunner, dflash_version, load_dflash, load_drafter_for
from engine.errors import NotAModelError
from engine.fixtures.tiny_dflash import build_dflash_pair
from tests.dflash_pairs import reference_drafter
from tests.helpers import tapped_pass

PROMPT = "abcab"
TOKENS = 40
TOLERANCE = 1e-3
CASES = [("qwen3", 1, False), ("qwen3", 2, False), ("qwen3_5", 1, False), ("qwen3_5", 2, False), ("qwen3", 1, True)]
IDS = ["dense-dflash", "dense-dflash2", "hybrid-dflash", "hybrid-dflash2", "dense-dflash-sliding"]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dflash")


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
    draft = reference_drafter(drafter_dir, monkeypatch)
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
    ours = DFlashRunner(load_dflash(drafter_dir), target)
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
    theirs = reference_drafter(drafter_dir, monkeypatch).bind(target)
    ours = DFlashRunner(load_dflash(drafter_dir), target)
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
    _, taps = tapped_pass(target, (0, 2))(mx.array([tokenizer.encode(PROMPT)]), make_prompt_cache(target))
    assert mx.max(mx.abs(taps - recorded.calls[0][2])).item() < 1e-5


# (our drafter, the last token, the tapped states not fed yet, tokens still wanted) -> the ids to verify
Propose = Callable[[Any, int, mx.array, int], list[int]]


def greedy_loop(target_dir: Path, drafter_dir: Path, make_drafter: Callable[[Path, Any], Any],
                propose: Propose) -> tuple[list[int], list[list[int]]]:
    """Our drafter and our tap in the reference's greedy loop (the target rolled back by trimming, or for a
    recurrent one by prefilling the accepted context again): the stream and every verified block's ids."""
    target, tokenizer = load(str(target_dir))
    drafter = make_drafter(drafter_dir, target)
    tap = tapped_pass(target, drafter.config.target_layer_ids)
    prompt = tokenizer.encode(PROMPT)
    cache = make_prompt_cache(target)
    logits, hidden = tap(mx.array([prompt]), cache)
    tokens, blocks = [int(mx.argmax(logits[0, -1]).item())], []
    while len(tokens) < TOKENS:
        block = propose(drafter, tokens[-1], hidden, TOKENS - len(tokens))
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


def greedy_dflash(target_dir: Path, drafter_dir: Path) -> tuple[list[int], list[list[int]]]:
    def propose(drafter: DFlashRunner, last: int, hidden: mx.array, wanted: int) -> list[int]:
        size = min(drafter.config.block_size, wanted + 1)  # the reference's last block is shorter
        return drafter.draft(last, hidden, block_size=size).ids.tolist()

    return greedy_loop(target_dir, drafter_dir, lambda path, target: DFlashRunner(load_dflash(path), target), propose)


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


def second_choice(distribution: mx.array) -> mx.array:
    """A deterministic stand-in for a random draw that both sides can make: each row's second most likely id."""
    return mx.argsort(-distribution, axis=-1)[..., 1]


@pytest.mark.parametrize("version", [1, 2])
def test_sampled_blocks_return_the_q_the_reference_samples_from(root: Path, monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """At T > 0 the block comes with q: DFlash's 15 rows at once, DFlash2's one per step along its path, each
    conditioned on the token drawn before it (drawn here as the second choice, on both sides)."""
    temperature = 0.7
    target_dir, drafter_dir = build_dflash_pair(root, "qwen3", version)
    target, _ = load(str(target_dir))
    theirs = reference_drafter(drafter_dir, monkeypatch).bind(target)
    monkeypatch.setattr(ref, "_sample_probs", second_choice)
    ours = DFlashRunner(load_dflash(drafter_dir), target)
    hidden = mx.random.normal((1, 6, 2 * 64), key=mx.random.key(5))
    block = mx.array([[2] + [theirs.config.mask_token_id] * 15])
    if version == 2:
        ids, candidates, rows = theirs.propose(block, hidden, theirs.make_cache(), temperature, logits_start=1)
        q = mx.put_along_axis(mx.zeros((15, 9)), candidates[0], rows[0], axis=-1)
    else:
        q = ref._sampling_probs(theirs(block, hidden, theirs.make_cache(), logits_start=1), temperature)[0]
        ids = second_choice(q)[None]

    def choose(logits: mx.array, position: int) -> tuple[mx.array, mx.array]:
        logq = logits / temperature - mx.logsumexp(logits / temperature, axis=-1, keepdims=True)
        return second_choice(logq).astype(mx.uint32), logq

    got = ours.draft(2, hidden, choose=choose)
    assert got.ids.tolist() == ids[0].tolist()
    assert mx.max(mx.abs(got.probs - q)).item() < TOLERANCE


@pytest.mark.parametrize("version", [1, 2])
def test_a_rewound_drafter_drafts_as_one_fed_only_the_kept_context(root: Path, version: int) -> None:
    target_dir, drafter_dir = build_dflash_pair(root, "qwen3", version)
    target, _ = load(str(target_dir))
    model = load_dflash(drafter_dir)
    hidden = mx.random.normal((1, 10, 2 * 64), key=mx.random.key(1))
    drafted, queued = DFlashRunner(model, target), DFlashRunner(model, target)
    drafted.draft(3, hidden)  # all 10 positions in the cache
    queued.feed(hidden)  # all 10 queued, none in the cache yet
    drafted.rewind(6)
    queued.rewind(4)
    assert (drafted.length, queued.length) == (6, 4)
    for rewound, kept in ((drafted, 6), (queued, 4)):
        expected = DFlashRunner(model, target).draft(5, hidden[:, :kept])
        got = rewound.draft(5)
        assert got.ids.tolist() == expected.ids.tolist()
        assert mx.max(mx.abs(got.logits - expected.logits)).item() < 1e-5


def broken_copy(drafter_dir: Path, out: Path, config_change: dict[str, Any], drop_weight: str | None = None) -> Path:
    """A copy of a drafter folder with its config changed (None deletes a key) or one weight missing."""
    out.mkdir()
    config = json.loads((drafter_dir / "config.json").read_text())
    for key, value in config_change.items():
        config.pop(key) if value is None else config.__setitem__(key, value)
    (out / "config.json").write_text(json.dumps(config))
    weights = mx.load(str(drafter_dir / "model.safetensors"))
    mx.save_safetensors(str(out / "model.safetensors"), {k: v for k, v in weights.items() if k != drop_weight})
    return out


@pytest.mark.parametrize(
    "change, drop, says",
    [
        ({"architectures": ["Qwen3ForCausalLM"], "dflash_config": None}, None, "is not a DFlash drafter"),
        ({"dflash_config": {"target_layer_ids": [0, 2]}}, None, "not a complete DFlash config (it has no mask_token_id)"),
        ({}, "fc.weight", "weights do not fit its DFlash config"),
    ],
    ids=["not-dflash", "no-mask-token", "missing-weight"],
)
def test_a_folder_that_is_not_a_whole_dflash_drafter_is_refused_in_one_line(
    root: Path, tmp_path: Path, change: dict[str, Any], drop: str | None, says: str
) -> None:
    _, drafter_dir = build_dflash_pair(root, "qwen3")
    broken = broken_copy(drafter_dir, tmp_path / "broken-DFlash", change, drop)
    with pytest.raises(NotAModelError) as raised:
        load_dflash(broken)
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_the_published_names_load_both_versions_with_the_targets_embeddings_and_head(root: Path) -> None:
    """Neither format ships an embedding table or an LM head; DFlash2 ships its codebooks without `.weight`."""
    for version in (1, 2):
        target_dir, drafter_dir = build_dflash_pair(root, "qwen3_5", version)
        names = set(mx.load(str(drafter_dir / "model.safetensors")))
        assert "fc.weight" in names and not any("embed" in n or "lm_head" in n for n in names)
        assert ("candidate_selector.predecessor_codebook" in names) == (version == 2)
        target, _ = load(str(target_dir))
        drafter = load_drafter_for(drafter_dir, target, json.loads((target_dir / "config.json").read_text()), "tiny-qwen3_5")
        assert drafter.config.version == version and drafter.config.target_layer_ids == (0, 2)
        assert drafter.head.embed_tokens is target.language_model.model.embed_tokens
        assert drafter.head.lm_head is target.language_model.lm_head


@pytest.mark.parametrize("version", [1, 2])
def test_context_absorbed_before_the_block_drafts_as_context_fed_with_it(root: Path, version: int) -> None:
    """A prompt's states go into the cache chunk by chunk as they are heard (`absorb`), the latest one with the
    block: the block is the one drafted with the whole context fed at once. (Not so for a full sliding window
    given one position with the block: mlx-lm's one-position update rotates the window, as in z-lab's own loop.)"""
    target_dir, drafter_dir = build_dflash_pair(root, "qwen3", version)
    target, _ = load(str(target_dir))
    model = load_dflash(drafter_dir)
    hidden = mx.random.normal((1, 11, 2 * 64), key=mx.random.key(2))
    whole, chunked = DFlashRunner(model, target), DFlashRunner(model, target)
    for start, end in ((0, 4), (4, 7), (7, 10)):
        chunked.feed(hidden[:, start:end])
        chunked.absorb()
    expected = whole.draft(5, hidden)
    got = chunked.draft(5, hidden[:, 10:])
    assert got.ids.tolist() == expected.ids.tolist()
    assert mx.max(mx.abs(got.logits - expected.logits)).item() < 1e-5


def test_a_rewound_sliding_window_takes_one_position_at_a_time(root: Path) -> None:
    """After a rewind the window holds fewer positions than it could; mlx-lm's one-position update took such a
    window for one still filling from position 0 and failed (negative dimensions)."""
    target_dir, drafter_dir = build_dflash_pair(root, "qwen3", 1, True)
    target, _ = load(str(target_dir))
    drafter = DFlashRunner(load_dflash(drafter_dir), target)
    hidden = mx.random.normal((1, 12, 2 * 64), key=mx.random.key(4))
    drafter.draft(1, hidden[:, :10])
    drafter.rewind(8)  # a Regenerate
    for position in (8, 9, 10):
        block = drafter.draft(2, hidden[:, position : position + 1])
        mx.eval(block.ids)
    assert drafter.length == 11


def test_dflash_versions_are_read_from_the_architecture_or_the_dflash_config() -> None:
    assert dflash_version({"architectures": ["DFlash2DraftModel"]}) == 2
    assert dflash_version({"architectures": ["DFlashDraftModel"]}) == 1
    assert dflash_version({"dflash_config": {"mask_token_id": 5}}) == 1  # an export that names no architecture
    assert dflash_version({"architectures": ["Qwen3ForCausalLM"]}) is None and dflash_version(None) is None
    assert dflash_version({"architectures": ["DFlash3DraftModel"]}) is None  # a DFlash version SpecChat cannot run
