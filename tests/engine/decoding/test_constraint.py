"""A JSON Schema constrains draft and target alike: the answer validates, and speculation stays exact under it."""

from __future__ import annotations

import json

import pytest

from engine.decoding.constraint import Constraint, grammar_problem, schema_problem
from engine.decoding.generation import generate, generate_stream
from engine.decoding.pair import ModelPair
from engine.errors import InvalidParameterError
from engine.events import RoundEvent
from engine.params import GenerationParams

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 12},
        "rating": {"type": "integer", "minimum": 1, "maximum": 5},
        "tags": {"type": "array", "items": {"enum": ["cat", "dog", "fish"]}, "maxItems": 3},
        "open": {"type": "boolean"},
    },
    "required": ["city", "rating", "tags", "open"],
    "additionalProperties": False,
}
PROMPT = 'Describe the city as JSON, like {"city": "Paris", "rating": 5, "tags": ["cat", "dog"], "open": true}.'
GREEDY = GenerationParams(drafter="model", temperature=0.0, top_p=1.0, max_tokens=80, json_schema=json.dumps(SCHEMA), num_draft=4,
                          adaptive=False)
SPECULATIVE = [("speculative", "model"), ("speculative", "lookup"), ("speculative", "model+lookup")]


def check_valid(text: str) -> None:
    """The answer follows SCHEMA (checked by hand: the project has no schema validator at run time)."""
    value = json.loads(text)
    assert set(value) == {"city", "rating", "tags", "open"}
    assert isinstance(value["city"], str) and len(value["city"]) <= 12
    assert isinstance(value["rating"], int) and 1 <= value["rating"] <= 5
    assert isinstance(value["tags"], list) and len(value["tags"]) <= 3 and set(value["tags"]) <= {"cat", "dog", "fish"}
    assert isinstance(value["open"], bool)


def test_a_constrained_answer_follows_the_schema_and_ends(tiny_pair: ModelPair) -> None:
    result = generate(PROMPT, tiny_pair, GREEDY.replace(mode="standard"))
    check_valid(result.text)
    assert result.finish_reason == "stop"
    free = generate(PROMPT, tiny_pair, GREEDY.replace(mode="standard", json_schema=None))
    with pytest.raises(ValueError):  # the random model alone writes no JSON: the constraint did
        json.loads(free.text)


@pytest.mark.parametrize("mode, drafter", SPECULATIVE)
def test_greedy_speculation_under_a_schema_equals_standard(tiny_pair: ModelPair, mode: str, drafter: str) -> None:
    expected = generate(PROMPT, tiny_pair, GREEDY.replace(mode="standard"))
    events = list(generate_stream(tiny_pair, PROMPT, GREEDY.replace(mode=mode, drafter=drafter)))
    result = events[-1]
    check_valid(result.text)
    assert result.tokens == expected.tokens
    assert result.stats.drafted > 0 and result.stats.accepted > 0
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    assert sum(r.drafted for r in rounds if r.drafter == drafter.split("+")[-1]) > 0


@pytest.mark.parametrize("mode, drafter", SPECULATIVE)
def test_a_seeded_sample_under_a_schema_equals_standards(tiny_pair: ModelPair, mode: str, drafter: str) -> None:
    """Seeded sampling draws each position's token from the target's (masked) distribution alone: the same answer
    whoever drafts, if and only if draft, verify and standard decoding are masked alike."""
    params = GenerationParams(drafter="model", temperature=1.0, top_p=1.0, max_tokens=80, seed=9, json_schema=json.dumps(SCHEMA), num_draft=4)
    expected = generate(PROMPT, tiny_pair, params.replace(mode="standard"))
    result = generate(PROMPT, tiny_pair, params.replace(mode=mode, drafter=drafter))
    check_valid(result.text)
    assert result.tokens == expected.tokens


def test_any_json_object(tiny_pair: ModelPair) -> None:
    result = generate(PROMPT, tiny_pair, GREEDY.replace(json_schema='{"type": "object"}', max_tokens=40))
    assert result.text.startswith("{")
    if result.finish_reason == "stop":
        assert isinstance(json.loads(result.text), dict)


def test_masks_along_a_draft_stop_at_the_first_forbidden_token(tiny_pair: ModelPair) -> None:
    tokenizer = tiny_pair.tokenizer
    constraint = Constraint.for_schema(json.dumps(SCHEMA), tokenizer, tiny_pair.vocab_width)
    good = tokenizer.encode('{"city": "Rome"', add_special_tokens=False)
    bad = tokenizer.encode("}", add_special_tokens=False)
    kept, masks = constraint.masks_along(good + bad + good)
    assert kept == len(good) and masks.shape == (len(good) + 1, tiny_pair.vocab_width)
    for i, token in enumerate(good):  # row i allows the token after i of them
        assert bool(masks[i, token])
    assert not bool(masks[len(good), bad[0]])
    again, _ = constraint.masks_along(good)  # the state was left where it was
    assert again == len(good)


def test_a_bad_schema_is_refused_in_one_line(tiny_pair: ModelPair) -> None:
    assert schema_problem(json.dumps(SCHEMA)) is None
    assert "nonsense" in schema_problem('{"type": "nonsense"}')
    assert "not a JSON object" in schema_problem("[1, 2")
    with pytest.raises(InvalidParameterError, match="JSON schema cannot constrain an answer: .*Fix the schema"):
        generate(PROMPT, tiny_pair, GREEDY.replace(json_schema='{"type": "nonsense"}'))


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_the_draft_model_drafts_under_the_constraint(tiny_pair: ModelPair, temperature: float) -> None:
    """Every drafted token is one the grammar allows after the draft before it, and q is zero where it forbids."""
    import mlx.core as mx

    from engine.decoding.drafting.draft_model import DraftModelDrafter
    from engine.decoding.policy.draft_length import FixedDraftLength
    from engine.decoding.sampling import Warper

    constraint = Constraint.for_schema(json.dumps(SCHEMA), tiny_pair.tokenizer, tiny_pair.vocab_width)
    warper = Warper(GenerationParams(temperature=temperature, top_p=1.0), tiny_pair.vocab_width)
    context = tiny_pair.prompt_ids(PROMPT)
    tiny_pair.draft_cache.catch_up(context)
    drafter = DraftModelDrafter(tiny_pair.draft_cache, warper, FixedDraftLength(8), constraint=constraint)
    draft = drafter.draft(context, 8)
    kept, masks = constraint.masks_along(draft.ids)
    assert draft.count == kept == 8 and draft.tokens.tolist() == draft.ids
    if temperature:
        assert float(mx.where(masks[:-1], 0.0, draft.probs).sum()) == 0.0


def test_constrained_answers_keep_their_own_adaptive_estimates(tiny_pair: ModelPair) -> None:
    """Forced tokens raise acceptance and a constrained draft reads every token: its costs are not free text's."""
    free = GREEDY.replace(json_schema=None, adaptive=True)
    generate(PROMPT, tiny_pair, free.replace(json_schema=json.dumps(SCHEMA)))
    constrained_policy = next(iter(tiny_pair._policies.values()))
    generate(PROMPT, tiny_pair, free)
    assert len(tiny_pair._policies) == 2 and constrained_policy in tiny_pair._policies.values()


@pytest.mark.real_weights
def test_smollm_writes_valid_json_under_a_schema_in_every_mode(smollm, tmp_path) -> None:
    """A real model and its first 8 layers as the draft: the schema holds, and speculation changes nothing."""
    from engine.models.loading import load_model
    from tests.real_models import truncated_copy

    pair = ModelPair(smollm, load_model(str(truncated_copy(smollm.path, tmp_path / "draft", keep_layers=8))))
    expected = generate(PROMPT, pair, GREEDY.replace(mode="standard"))
    check_valid(expected.text)
    for drafter in ("model", "lookup", "model+lookup"):
        result = generate(PROMPT, pair, GREEDY.replace(drafter=drafter))
        assert result.tokens == expected.tokens and result.stats.drafted > 0, drafter


def test_a_lark_grammar_is_checked_before_it_constrains() -> None:
    assert grammar_problem('start: "yes" | "no"') is None
    assert "unknown name" in grammar_problem("start: nothing_defined")


def test_a_grammar_is_checked_once_however_often_it_comes(monkeypatch) -> None:
    """An agent sends its custom tools' grammars with every request: the check (10-25 ms for Codex's apply_patch)
    runs once per grammar, with the same answer after."""
    import uuid

    from llguidance import LLMatcher

    from engine.decoding import constraint

    checked = []

    class Counting:
        grammar_from_lark = staticmethod(LLMatcher.grammar_from_lark)

        @staticmethod
        def validate_grammar(grammar: str) -> str:
            checked.append(grammar)
            return LLMatcher.validate_grammar(grammar)

    monkeypatch.setattr(constraint, "LLMatcher", Counting)
    fresh = f'start: "{uuid.uuid4()}"'
    assert [grammar_problem(fresh) for _ in range(3)] == [None] * 3 and len(checked) == 1
