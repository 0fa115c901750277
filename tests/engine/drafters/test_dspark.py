"""Parity of our DSpark drafter with mlx-dspark (PyPI `mlx-dspark`, `mlx_dspark/model.py` and its round).

No trained drafter can be downloaded here, so this is the evidence that a published DSpark head drafts here what
it drafts there: the same random weights in DeepSeek's format, loaded by both, must give the same step logits
(the block's logits plus the Markov bias; max abs difference under 1e-3 in float32), the same greedy ids and the
same confidences, round by round over mlx-dspark's own `speculative_generate`, and the confidence head must cut
each draft to the length mlx-dspark verified. Dense (Qwen3) and hybrid GatedDeltaNet (Qwen3.5) targets; heads
with their own embedding table and LM head (DeepSeek's) and heads that borrow the target's.
mlx-dspark installs with `pip install --no-deps mlx-dspark` (the Makefile's install step does).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mlx.core as mx
import pytest
from mlx_dspark import generate as ref_generate
from mlx_dspark import sampling as ref_sampling
from mlx_dspark.load import load_drafter as ref_load_drafter
from mlx_dspark.target import Target
from mlx_lm import load

from engine.drafters.dflash import dflash_version
from engine.drafters.dspark import DSparkRunner, confident_length, load_dspark, load_dspark_drafter_for
from engine.errors import IncompatiblePairError, NotAModelError
from engine.fixtures.tiny_dspark import build_dspark_pair, specforge_layout
from tests.engine.drafters.test_dflash import greedy_loop, plain_greedy

PROMPT = "abcab"
TOKENS = 40
TOLERANCE = 1e-3
THRESHOLD = 0.5  # the confidence head cuts drafts of 7 to 2..6 on these heads
# (target kind, whether the head ships the target's embedding table and LM head, confidence threshold)
CASES = [("qwen3", True, THRESHOLD), ("qwen3_5", True, THRESHOLD), ("qwen3", False, THRESHOLD), ("qwen3", True, 0.0)]
IDS = ["dense", "hybrid", "dense-borrowed-head", "dense-no-cut"]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dspark")


@dataclass
class Round:
    """What mlx-dspark's drafter was fed and proposed in one round, and how many of its drafts it verified."""

    context: mx.array
    last: int
    ids: list[int]
    base_ids: list[int]  # the block's argmax before the Markov head
    step_logits: mx.array
    confidence: list[float] | None = None
    verified: int = 0


@dataclass
class Recorder:
    """Wraps mlx-dspark's drafter methods to record each round (its context feeds, block, heads)."""

    drafter: Any
    rounds: list[Round] = field(default_factory=list)
    fed: list[mx.array] = field(default_factory=list)

    def install(self) -> None:
        d = self.drafter
        update, sample, confidence = d.update_context, d.sample_block, d.confidence_logits

        def update_context(fused: mx.array, ctx_offset: int, ctx_caches: Any) -> None:
            self.fed.append(fused)
            update(fused, ctx_offset=ctx_offset, ctx_caches=ctx_caches)

        def sample_block(base_logits: mx.array, first_prev_token: int) -> mx.array:
            ids = sample(base_logits, first_prev_token=first_prev_token)
            previous = mx.concatenate([mx.array([first_prev_token]), ids[:-1].astype(mx.int32)])
            steps = base_logits + d.markov_head.step_bias(previous)
            context = mx.concatenate(self.fed, axis=1)
            self.fed = []
            base_ids = mx.argmax(base_logits, axis=-1).tolist()
            self.rounds.append(Round(context, first_prev_token, ids.tolist(), base_ids, steps))
            return ids

        def confidence_logits(block_hidden: mx.array, prev_token_ids: mx.array) -> mx.array:
            out = confidence(block_hidden, prev_token_ids)
            self.rounds[-1].confidence = mx.sigmoid(out).tolist()
            return out

        d.update_context, d.sample_block, d.confidence_logits = update_context, sample_block, confidence_logits

    def on_round(self, drafted: int, **_: Any) -> None:
        self.rounds[-1].verified = drafted


def run_reference(target_dir: Path, drafter_dir: Path, threshold: float) -> tuple[list[int], Recorder]:
    """mlx-dspark's greedy stream over the prompt with every drafter round recorded (no prompt lookup)."""
    model, tokenizer = load(str(target_dir))
    drafter, _ = ref_load_drafter(str(drafter_dir), quantize=False)
    recorder = Recorder(drafter)
    recorder.install()
    result = ref_generate.speculative_generate(
        Target(model, tokenizer), tokenizer, drafter, prompt_ids=tokenizer.encode(PROMPT), max_new_tokens=TOKENS,
        max_draft_tokens=None, confidence_threshold=threshold, lookup_drafts=False, on_round=recorder.on_round,
    )
    return result.token_ids, recorder


@pytest.mark.parametrize("kind, own_head, threshold", CASES, ids=IDS)
def test_our_drafter_drafts_what_mlx_dspark_drafted_in_each_round_of_its_stream(
    root: Path, kind: str, own_head: bool, threshold: float
) -> None:
    target_dir, drafter_dir = build_dspark_pair(root, kind, own_head=own_head)
    tokens, recorder = run_reference(target_dir, drafter_dir, threshold)
    target, tokenizer = load(str(target_dir))
    assert tokens == plain_greedy(target, tokenizer.encode(PROMPT), TOKENS)  # the reference is exact here
    rounds = recorder.rounds
    assert len(rounds) >= 10 and any(r.ids != r.base_ids for r in rounds)  # many rounds; the Markov head matters
    ours = DSparkRunner(load_dspark(drafter_dir), target)
    worst = 0.0
    for r in rounds:
        draft = ours.draft(r.last, r.context)
        assert draft.ids.tolist() == r.ids
        worst = max(worst, mx.max(mx.abs(draft.logits - r.step_logits)).item())
        if threshold:  # mlx-dspark asks its confidence head only when it cuts drafts
            assert mx.max(mx.abs(draft.confidence - mx.array(r.confidence))).item() < TOLERANCE
            assert confident_length(draft.confidence.tolist(), threshold) == r.verified
    assert worst < TOLERANCE
    if threshold:
        assert len({r.verified for r in rounds}) >= 3  # the head chose several lengths, not one


def test_specforges_packaging_drafts_as_deepseeks_does(root: Path) -> None:
    """The same weights with the settings nested in `dflash_config` (and not mistaken for a DFlash drafter)."""
    target_dir, drafter_dir = build_dspark_pair(root, "qwen3")
    nested = specforge_layout(drafter_dir, root / "tiny-qwen3-DSpark-specforge")
    assert dflash_version(json.loads((nested / "config.json").read_text())) is None
    target, _ = load(str(target_dir))
    deepseek, specforge = (DSparkRunner(load_dspark(d), target) for d in (drafter_dir, nested))
    mx.random.seed(5)
    context = mx.random.normal((1, 6, 2 * 64))
    assert deepseek.draft(3, context).ids.tolist() == specforge.draft(3, context).ids.tolist()


@pytest.mark.parametrize("change, problem", [
    ({"model_type": "gemma4_text"}, "a gemma4_text backbone (only Qwen3 backbones run here)"),
    ({"speculators_model_type": "dspark"}, "the speculators packaging"),
    ({"draft_vocab_size": 4}, "a reduced draft vocabulary"),
    ({"markov_head_type": "rnn"}, "a rnn Markov head"),
    ({"dflash_query_causal": True}, "a causal or sliding-window block"),
])
def test_a_head_this_network_does_not_compute_is_refused_in_one_line(
    root: Path, tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    _, drafter_dir = build_dspark_pair(root, "qwen3")
    folder = tmp_path / "dspark_qwen3_8b_block7"
    shutil.copytree(drafter_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | change))
    with pytest.raises(NotAModelError) as error:
        load_dspark(folder)
    assert str(error.value).startswith(f"dspark_qwen3_8b_block7 is a DSpark drafter SpecChat cannot run yet: {problem}")
    assert "Pick another drafter" in str(error.value) and "\n" not in str(error.value)


def test_weights_that_do_not_fit_the_config_are_a_broken_download(root: Path, tmp_path: Path) -> None:
    _, drafter_dir = build_dspark_pair(root, "qwen3")
    folder = tmp_path / "dspark"
    shutil.copytree(drafter_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"markov_rank": 8}))
    with pytest.raises(NotAModelError, match=r"^dspark's weights do not fit its DSpark config \(.*\)\. Download it again\.$"):
        load_dspark(folder)


def test_a_target_of_another_shape_is_refused_naming_the_dspark_drafter(root: Path) -> None:
    target_dir, drafter_dir = build_dspark_pair(root, "qwen3")
    target, _ = load(str(target_dir))
    config = json.loads((target_dir / "config.json").read_text())
    with pytest.raises(IncompatiblePairError) as error:
        load_dspark_drafter_for(drafter_dir, target, config | {"hidden_size": 128}, "Qwen/Qwen3-8B")
    assert str(error.value).startswith(f"{drafter_dir.name} is a DSpark drafter and cannot draft for Qwen/Qwen3-8B: "
                                       "it was trained for another target, a model of another width (hidden "
                                       "size 64, this target's 128). Pick the target it was trained for")


def test_a_config_missing_a_setting_is_a_broken_download(root: Path, tmp_path: Path) -> None:
    _, drafter_dir = build_dspark_pair(root, "qwen3")
    folder = tmp_path / "dspark"
    shutil.copytree(drafter_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    del config["target_layer_ids"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(NotAModelError, match=r"^dspark's config.json is not a complete DSpark config \(it has no "
                                             r"target_layer_ids\)\. Download it again\.$"):
        load_dspark(folder)


def greedy_dspark(target_dir: Path, drafter_dir: Path, threshold: float) -> tuple[list[int], list[tuple[list[int], int]]]:
    """Our drafter and the engine's tap (`tests.helpers.tapped_pass`) in mlx-dspark's greedy loop, the confidence head cutting
    each draft: the stream, and each round's drafted ids and how many of them were verified."""
    rounds: list[tuple[list[int], int]] = []

    def propose(drafter: DSparkRunner, last: int, hidden: mx.array, wanted: int) -> list[int]:
        draft = drafter.draft(last, hidden)
        ids = draft.ids.tolist()
        rounds.append((ids, confident_length(draft.confidence.tolist(), threshold) if threshold else len(ids)))
        return ids[: rounds[-1][1]]

    tokens, _ = greedy_loop(target_dir, drafter_dir, lambda path, target: DSparkRunner(load_dspark(path), target), propose)
    return tokens, rounds


@pytest.mark.parametrize("kind", ["qwen3", "qwen3_5"])
def test_our_drafter_and_tap_in_the_greedy_loop_reproduce_mlx_dsparks_stream(root: Path, kind: str) -> None:
    target_dir, drafter_dir = build_dspark_pair(root, kind)
    tokens, recorder = run_reference(target_dir, drafter_dir, THRESHOLD)
    ours, rounds = greedy_dspark(target_dir, drafter_dir, THRESHOLD)
    assert ours == tokens
    assert rounds == [(r.ids, r.verified) for r in recorder.rounds]


def second_choice(distribution: mx.array) -> mx.array:
    """A deterministic stand-in for a random draw that both sides can make: each row's second most likely id."""
    return mx.argsort(-distribution, axis=-1)[..., 1]


def reference_block_logits(drafter: Any, last: int, context: mx.array) -> mx.array:
    """mlx-dspark's block logits (before the Markov head) after a fresh context, as its round computes them."""
    caches = drafter.make_ctx_cache()
    drafter.update_context(context, ctx_offset=0, ctx_caches=caches)
    block = mx.array([[last] + [drafter.mask_token_id] * (drafter.block_size - 1)])
    hidden = drafter.backbone(drafter.embed(block), context.shape[1], caches)
    return drafter.compute_logits(drafter.head_slice(hidden, drafter.max_draft))[0]


def test_sampled_drafts_return_the_q_mlx_dspark_samples_from(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At T > 0 each position's q depends on the token drawn before it (the Markov head): drawn here as the second
    choice on both sides, so that q of every step is conditioned on the same, non-greedy path."""
    temperature = 0.7
    target_dir, drafter_dir = build_dspark_pair(root, "qwen3")
    target, _ = load(str(target_dir))
    theirs, _ = ref_load_drafter(str(drafter_dir), quantize=False)
    monkeypatch.setattr(ref_sampling, "sample_probs", second_choice)
    context = mx.random.normal((1, 6, 2 * 64), key=mx.random.key(5))
    ids, q = theirs.sample_block_probs(reference_block_logits(theirs, 2, context), 2, temperature)

    def choose(logits: mx.array, position: int) -> tuple[mx.array, mx.array]:
        logq = logits / temperature - mx.logsumexp(logits / temperature, axis=-1, keepdims=True)
        return second_choice(logq).astype(mx.uint32), logq

    got = DSparkRunner(load_dspark(drafter_dir), target).draft(2, context, choose=choose)
    assert got.ids.tolist() == ids.tolist()
    assert mx.max(mx.abs(got.probs - q)).item() < TOLERANCE


def test_a_shorter_block_drafts_the_first_tokens_of_the_full_one(root: Path) -> None:
    """The backbone always runs its whole (bidirectional) block; a smaller `block_size` only stops the heads."""
    target_dir, drafter_dir = build_dspark_pair(root, "qwen3")
    target, _ = load(str(target_dir))
    model = load_dspark(drafter_dir)
    context = mx.random.normal((1, 6, 2 * 64), key=mx.random.key(2))
    full = DSparkRunner(model, target).draft(4, context)
    short = DSparkRunner(model, target).draft(4, context, block_size=4)
    assert full.ids.shape == (7,) and short.ids.tolist() == full.ids[:3].tolist()
    assert mx.max(mx.abs(short.logits - full.logits[:3])).item() < 1e-5


def test_the_chooser_sees_each_steps_context_position_and_may_return_no_q(root: Path) -> None:
    """As DFlash's round calls it: `position` is the first drafted token's index (the engine's coupled sampling
    draws each position with its own noise), and a greedy chooser (one applying a penalty) returns no q."""
    target_dir, drafter_dir = build_dspark_pair(root, "qwen3")
    target, _ = load(str(target_dir))
    seen: list[int] = []

    def greedy(logits: mx.array, position: int) -> tuple[mx.array, None]:
        seen.append(position)
        return mx.argmax(logits, axis=-1).astype(mx.uint32), None

    context = mx.random.normal((1, 6, 2 * 64), key=mx.random.key(4))
    model = load_dspark(drafter_dir)
    got = DSparkRunner(model, target).draft(1, context, block_size=5, choose=greedy, position=40)
    assert seen == [40, 41, 42, 43] and got.probs is None
    assert got.ids.tolist() == DSparkRunner(model, target).draft(1, context).ids[:4].tolist()
