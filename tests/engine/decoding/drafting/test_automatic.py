"""Automatic: each round the drafter predicted fastest drafts, or none; the output stays the target's."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from engine.decoding.drafting.automatic import AutomaticDrafter, Ballot, asked_drafters
from engine.decoding.drafting.drafter import NO_DRAFT, Draft, point_draft
from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.decoding.policy.draft_length import AdaptiveDraftLength
from engine.decoding.policy.estimates import RoundCosts
from engine.models.loading import LoadedModel
from engine.params import GenerationParams

GREEDY = GenerationParams(temperature=0.0, top_p=1.0, max_tokens=48)
PROMPTS = ["Repeat this: the cat sat on the mat, the cat sat on the mat, the cat sat on the",
           "What is speculative decoding?", "def fibonacci(n):"]


def test_automatic_is_the_default_drafter() -> None:
    assert GenerationParams().drafter == "auto"


def test_greedy_automatic_is_token_identical_to_standard_with_lookup_and_a_draft_model(tiny_pair: ModelPair) -> None:
    assert asked_drafters(tiny_pair, GREEDY) == ("lookup", "model")
    drafted_by: set[str] = set()
    for prompt in PROMPTS * 2:  # the second pass starts from what the first measured
        expected = generate(prompt, tiny_pair, GREEDY.replace(mode="standard")).tokens
        result = generate(prompt, tiny_pair, GREEDY)
        assert result.tokens == expected, prompt
        drafted_by |= set(result.stats.drafted_by)
    assert drafted_by == {"lookup", "model"}  # both candidates drafted in some rounds


def test_greedy_automatic_with_mtp_heads_lookup_and_a_draft_model_is_token_identical(mtp_target) -> None:
    target: LoadedModel = mtp_target("hybrid")
    pair = ModelPair(target, target)  # the target as its own draft model: a candidate that is always right
    assert asked_drafters(pair, GREEDY) == ("lookup", "mtp", "model")
    drafted_by: set[str] = set()
    for prompt in ["abcabd", "abcabdgfe", "abcabd"]:
        expected = generate(prompt, ModelPair(target), GREEDY.replace(mode="standard", max_tokens=60)).tokens
        result = generate(prompt, pair, GREEDY.replace(max_tokens=60))
        assert result.tokens == expected, prompt
        drafted_by |= set(result.stats.drafted_by)
    assert {"mtp", "model"} <= drafted_by  # each drafts until measured; later rounds go to what the timings favour


def test_a_seeded_sampled_answer_under_automatic_is_the_standard_one(tiny_pair: ModelPair) -> None:
    """params.seed couples every position's draw to the seed: whichever drafter runs, the text is standard's."""
    sampled = GenerationParams(temperature=1.0, top_p=1.0, max_tokens=40, seed=11)
    drafted = 0
    for prompt in PROMPTS:
        expected = generate(prompt, ModelPair(tiny_pair.target), sampled.replace(mode="standard")).tokens
        result = generate(prompt, tiny_pair, sampled)
        assert result.tokens == expected, prompt
        drafted += result.stats.drafted
    assert drafted > 0


class Scripted:
    """A drafter whose drafts the simulated target accepts always ("good") or never ("bad")."""

    def __init__(self, source: str, policy: Ballot) -> None:
        self.source = source
        self.policy = policy
        self.idle = True

    def start(self, context: list[int]) -> None:
        pass

    def propose(self, context: list[int], limit: int, split_pass: bool = False) -> Draft:
        k = self.policy.choose(self.source, limit, split_pass)
        return point_draft([1] * k, self.source, 0.0005 * k) if k else NO_DRAFT

    def speculate(self, context: list[int], draft: Draft, verdict: object) -> int:
        return 0

    def settle(self, draft: Draft, ids: list[int], accepted: int) -> None:
        pass


def run_rounds(sources: list[str], rounds: int, accepts: Callable[[str, int], float] | None = None,
               ballot: Ballot | None = None) -> list[str]:
    """Automatic over scripted drafters against a target whose pass costs 50 ms plus 2 ms a token: who drafted each
    round ("none": a plain step). `accepts(source, round)`: the share of a draft the target accepts (default: all of
    "good"'s, none of any other's); `ballot`: the policy they share (default: a new one)."""
    ballot = ballot or Ballot(AdaptiveDraftLength(8))
    accepts = accepts or (lambda source, _: 1.0 if source == "good" else 0.0)
    automatic = AutomaticDrafter([Scripted(source, ballot) for source in sources], ballot)
    chosen = []
    for n in range(rounds):
        draft = automatic.propose([0, 1, 2], 8)
        accepted = int(draft.count * accepts(draft.source, n)) if draft.count else 0
        ballot.observe(RoundCosts(draft.source, draft.count, accepted, 0.0005 if draft.count else 0.0,
                                  0.050 + 0.002 * draft.count))
        chosen.append(draft.source)
    return chosen


def test_automatic_switches_to_the_drafter_that_pays() -> None:
    for order in (["bad", "good"], ["good", "bad"]):
        chosen = run_rounds(order, 300)[-100:]
        assert chosen.count("good") >= 90, order


def test_automatic_falls_back_to_plain_steps_when_no_drafter_pays() -> None:
    chosen = run_rounds(["bad", "worse"], 400)[-200:]
    assert chosen.count("none") >= 160  # plain steps, and each given-up drafter probed now and then (as for one alone)


def test_a_drafter_given_up_on_is_found_when_it_turns_good_while_another_pays() -> None:
    """Issue 31: while one drafter paid, the others were never asked, so one given up on early in an answer was
    never found when it turned good later in it. Probes go on against the one that pays."""
    turns = 300
    accepts = {"steady": lambda n: 0.5, "late": lambda n: 1.0 if n >= turns else 0.0}
    chosen = run_rounds(["late", "steady"], turns + 300, lambda source, n: accepts[source](n))
    assert chosen[100:turns].count("steady") >= 180  # the one that pays drafts, the other is probed now and then
    assert chosen[-100:].count("late") >= 90


def test_a_drafter_bad_on_chat_and_good_on_code_is_chosen_on_code_after_chat(tiny_pair: ModelPair) -> None:
    """Issue 31: estimates one kind of prompt earned decided for the next: a block drafter right 30% of the time on
    chat and 90% on code was given up during a chat and never drafted on the code after it. Each kind of prompt has a
    policy of its own."""
    from engine.decoding.generation import _policy

    right = {"chat": {"chatty": 1.0, "coder": 0.0}, "code": {"chatty": 0.5, "coder": 1.0}}
    chosen = {}
    for prompt_kind in ("chat", "code"):
        ballot = Ballot(_policy(tiny_pair, GREEDY, prompt_kind))
        accepts = right[prompt_kind]
        chosen[prompt_kind] = run_rounds(["chatty", "coder"], 200, lambda source, _, accepts=accepts: accepts[source], ballot)
    assert chosen["chat"][-100:].count("chatty") >= 90 and chosen["code"][-100:].count("coder") >= 90


@pytest.fixture
def chat_then_code(tiny_pair: ModelPair, tmp_path):
    """The tiny pair with two scripted drafters (`engine/cli/scripted_drafters.py`): a block drafter never right on chat
    and always on code, a token drafter always right on chat and on code right 60% of the time; and a chat prompt
    and a code prompt, as token ids. The kinds and modes they register are removed afterwards."""
    from engine.cli import benchmark
    from engine.cli.scripted_drafters import register_scripted, script_drafters
    from engine.drafter_kinds import KINDS

    scripts = {"scripted-coder": {"block": True, "cost": 0.05, "acceptance": {"code": 1.0}, "seed": 1},
               "scripted-chatty": {"block": False, "cost": 0.05, "acceptance": {"chat": 1.0, "code": 0.6}, "seed": 2}}
    paths = []
    for name, script in scripts.items():
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps({"name": name, **script}))
        register_scripted(paths[-1])
    prompts = [tiny_pair.prompt_ids("Tell me about the sea."), tiny_pair.prompt_ids("Finish this:\n```python\ndef f(x):\n```")]
    script_drafters(tiny_pair, paths, prompts, ["chat", "code"], GREEDY)
    yield tiny_pair, prompts
    for name in scripts:
        KINDS.pop(name, None)
        benchmark.OUR_MODES.pop(name, None)


def test_automatic_drafts_on_code_with_the_drafter_given_up_in_the_chat_before(chat_then_code, ticking_clock) -> None:
    """Issue 31, measured on SmolLM2: on code writing Automatic drafted with the token drafter (right 50%) and never
    tried the block drafter (right 90%), which it had given up on in the chat before. The clock ticks (no wall-clock
    costs): beside a walk loading both cores, the measured costs once made the two drafters draft 8 rounds each."""
    pair, (chat, code) = chat_then_code
    for _ in range(3):
        generate(chat, pair, GREEDY)
    drafted_by = generate(code, pair, GREEDY).stats.drafted_by
    assert drafted_by.get("scripted-coder", 0) > drafted_by.get("scripted-chatty", 0), drafted_by


def test_the_policy_row_says_which_drafter_automatic_chooses_and_why(tiny_pair: ModelPair) -> None:
    result = generate(PROMPTS[0], tiny_pair, GREEDY)
    first = result.stats.policy[0]
    assert first.drafter == "auto"
    assert first.reason.startswith(("lookup", "draft model", "standard decoding ("))
    assert "Automatic: " in result.summary() and first.reason in result.summary()


def test_a_pinned_drafter_is_kept(tiny_pair: ModelPair) -> None:
    result = generate(PROMPTS[1], tiny_pair, GREEDY.replace(drafter="model"))
    assert set(result.stats.drafted_by) <= {"model"} and all(b.drafter != "auto" for b in result.stats.policy)


@pytest.mark.parametrize("good_first", [True, False])
def test_the_automatic_belief_names_the_fastest_paying_drafter(good_first: bool) -> None:
    from engine.decoding.drafting.automatic import automatic_belief

    policy = AdaptiveDraftLength(8)
    for _ in range(30):
        for source, accepted in ([("model", 4), ("lookup+copying", 0)] if good_first else [("lookup+copying", 0), ("model", 4)]):
            policy.observe(RoundCosts(source, 4, accepted, 0.001, 0.058))
        policy.observe(RoundCosts("none", 0, 0, 0.0, 0.050))
    belief = automatic_belief(policy, policy.beliefs())
    assert belief.reason.startswith("draft model (predicted ") and "x as fast as without drafting" in belief.reason


def test_with_no_drafter_paying_the_automatic_belief_says_standard_decoding() -> None:
    from engine.decoding.drafting.automatic import automatic_belief

    policy = AdaptiveDraftLength(8)
    for _ in range(30):
        policy.observe(RoundCosts("lookup+copying", 4, 0, 0.001, 0.058))
        policy.observe(RoundCosts("none", 0, 0, 0.0, 0.050))
    belief = automatic_belief(policy, policy.beliefs())
    assert belief.reason.startswith("standard decoding (no drafter predicted faster; the closest, lookup while copying")


def test_when_no_drafter_drafted_the_automatic_belief_says_none_had_a_draft() -> None:
    """A pair with only lookup, on an answer that repeats nothing, drafts nothing: the reason is that nothing was
    offered (a user read "no drafter measured yet" as Automatic not trying)."""
    from engine.decoding.drafting.automatic import automatic_belief

    policy = AdaptiveDraftLength(8)
    for _ in range(10):
        policy.observe(RoundCosts("none", 0, 0, 0.0, 0.050))
    assert automatic_belief(policy, policy.beliefs()).reason == "standard decoding (no drafter had a draft to offer)"


def test_automatic_remembers_what_it_measured_across_launches(tiny_target, tiny_draft, tmp_path, monkeypatch) -> None:
    from engine.decoding.generation import _policy

    monkeypatch.setenv("SPECCHAT_HOME", str(tmp_path))
    first = ModelPair(tiny_target, tiny_draft)
    generate(PROMPTS[0], first, GREEDY)
    measured = _policy(first, GREEDY, "chat").measured()
    later = ModelPair(tiny_target, tiny_draft)  # a new launch: a new pair of the same folders
    assert measured["acceptance"] and _policy(later, GREEDY, "chat").measured() == measured
    assert not _policy(later, GREEDY, "code").measured()["acceptance"]  # another kind of prompt: nothing measured
    assert not _policy(ModelPair(tiny_target), GREEDY, "chat").measured()["acceptance"]  # another pair: nothing measured
