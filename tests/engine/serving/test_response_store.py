"""Recent Responses kept for `previous_response_id`: bounded by count and by characters, least recently used out
first; and a stateful conversation through the server with the openai client."""

from __future__ import annotations

import openai
import pytest

from engine.serving.response_store import ResponseStore
from tests.engine.serving.scripted import ScriptedRunner, serving


def turn(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_the_least_recently_used_response_goes_first_beyond_the_count() -> None:
    store = ResponseStore(max_responses=2)
    store.remember("a", turn("1"))
    store.remember("b", turn("2"))
    assert store.conversation("a") == turn("1")  # a is now the most recent
    store.remember("c", turn("3"))
    assert (store.conversation("b"), store.conversation("a"), len(store)) == (None, turn("1"), 2)


def test_the_characters_kept_stay_under_the_bound() -> None:
    store = ResponseStore(max_chars=200)
    for i in range(10):
        store.remember(str(i), turn("x" * 60))
    assert 0 < store.chars <= 200 and store.conversation("9") and store.conversation("0") is None


def test_a_conversation_is_a_copy_the_caller_may_change() -> None:
    store = ResponseStore()
    store.remember("a", turn("1"))
    store.conversation("a")[0]["content"] = "changed"
    assert store.conversation("a") == turn("1")


def test_a_client_continues_a_stored_response_by_its_id(tool_target) -> None:
    runner = ScriptedRunner(tool_target.tokenizer, ["The sea is calm.", "Still calm.", "x"])
    with serving(runner) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        first = client.responses.create(model="tiny-tools", input="How is the sea?", instructions="Be brief.")
        second = client.responses.create(model="tiny-tools", input="And now?", previous_response_id=first.id)
        assert second.previous_response_id == first.id and second.output_text == "Still calm."
        unstored = client.responses.create(model="tiny-tools", input="Hi", store=False)
        with pytest.raises(openai.BadRequestError, match="not found"):
            client.responses.create(model="tiny-tools", input="More?", previous_response_id=unstored.id)
    assert "How is the sea?" in runner.prompts[1] and "The sea is calm." in runner.prompts[1]
    assert "Be brief." not in runner.prompts[1]  # instructions do not carry over
