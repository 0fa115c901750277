"""response_format (and Responses' text.format, Anthropic's output_format) through the server: the answer follows the
schema with speculation on, greedy equal to standard decoding under the same schema; a bad schema is OpenAI's 400."""

from __future__ import annotations

import json
from typing import Literal

import httpx
import openai
import pytest
from pydantic import BaseModel, Field

from engine.serving.api_error import ApiError
from engine.serving.response_format import ANY_OBJECT, anthropic_schema, chat_schema, responses_schema
from tests.engine.decoding.test_constraint import SCHEMA, check_valid

PROMPT = [{"role": "user", "content": 'Describe Paris as JSON, like {"city": "Paris", "rating": 5, "tags": [], "open": true}.'}]
FORMAT = {"type": "json_schema", "json_schema": {"name": "city", "schema": SCHEMA, "strict": True}}


@pytest.fixture(scope="module")
def client(tiny_url) -> openai.OpenAI:
    return openai.OpenAI(base_url=tiny_url + "/v1", api_key="unused", max_retries=0)


def test_each_api_names_its_schema_its_own_way() -> None:
    text = json.dumps(SCHEMA)
    assert chat_schema({}) is None and chat_schema({"response_format": {"type": "text"}}) is None
    assert chat_schema({"response_format": {"type": "json_object"}}) == ANY_OBJECT
    assert json.loads(chat_schema({"response_format": FORMAT})) == json.loads(text)
    assert json.loads(responses_schema({"text": {"format": {"type": "json_schema", "name": "c", "schema": SCHEMA}}})) == SCHEMA
    assert responses_schema({"text": {"format": {"type": "json_object"}}}) == ANY_OBJECT
    assert json.loads(anthropic_schema({"output_format": {"type": "json_schema", "schema": SCHEMA}})) == SCHEMA
    with pytest.raises(ApiError) as refused:
        chat_schema({"response_format": {"type": "yaml"}})
    assert refused.value.status == 400 and refused.value.param == "response_format"


def test_a_schema_the_grammar_cannot_compile_is_refused_before_it_is_queued() -> None:
    bad = {"type": "json_schema", "json_schema": {"name": "broken", "schema": {"type": "nonsense"}}}
    with pytest.raises(ApiError) as refused:
        chat_schema({"response_format": bad})
    error = refused.value
    assert (error.status, error.kind, error.param) == (400, "invalid_request_error", "response_format")
    assert error.message.startswith("Invalid schema for response_format 'broken': ") and "nonsense" in error.message


@pytest.mark.parametrize("drafter", ["model", "lookup", "model+lookup"])
def test_the_openai_client_gets_json_that_follows_the_schema_with_speculation_on(client: openai.OpenAI, drafter: str) -> None:
    def ask(**options: object) -> openai.types.chat.ChatCompletion:
        return client.chat.completions.create(model="tiny-target", messages=PROMPT, response_format=FORMAT, max_tokens=120,
                                              extra_body=options)  # type: ignore[arg-type]  # the client's types lack our options

    speculative = ask(mode="speculative", drafter=drafter, num_draft=4, adaptive=False)
    standard = ask(mode="standard")
    check_valid(speculative.choices[0].message.content)
    assert speculative.choices[0].message.content == standard.choices[0].message.content
    assert speculative.choices[0].finish_reason == "stop"
    assert speculative.speculation["drafted"] > 0  # type: ignore[attr-defined]  # our extension of the client's response


def test_a_streamed_answer_follows_the_schema(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model="tiny-target", messages=PROMPT, response_format=FORMAT, max_tokens=120, stream=True)
    check_valid("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))


class City(BaseModel):
    city: str = Field(max_length=12)
    rating: int = Field(ge=1, le=5)
    tags: list[Literal["cat", "dog", "fish"]] = Field(max_length=3)
    open: bool


def test_the_openai_clients_parse_helper_reads_the_answer(client: openai.OpenAI) -> None:
    """`parse` sends the model's strict JSON schema and reads the answer back into it."""
    completion = client.chat.completions.parse(model="tiny-target", messages=PROMPT, response_format=City, max_tokens=120)
    parsed = completion.choices[0].message.parsed
    assert isinstance(parsed, City) and 1 <= parsed.rating <= 5


def test_json_object_gives_an_object(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="tiny-target", messages=PROMPT, response_format={"type": "json_object"},
                                                max_tokens=30)
    assert completion.choices[0].message.content.startswith("{")


def test_a_bad_schema_is_a_400_in_openais_shape_and_the_server_keeps_serving(client: openai.OpenAI, tiny_url: str) -> None:
    bad = {"type": "json_schema", "json_schema": {"name": "broken", "schema": {"type": "object", "required": 3}}}
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="tiny-target", messages=PROMPT, response_format=bad)  # type: ignore[arg-type]  # a bad value on purpose
    assert refused.value.status_code == 400
    assert refused.value.body["param"] == "response_format" and "Invalid schema" in refused.value.body["message"]
    raw = httpx.post(tiny_url + "/v1/responses", json={"input": "hi", "text": {"format": {"type": "json_schema", "name": "x",
                                                                                        "schema": {"type": "nonsense"}}}})
    assert raw.status_code == 400 and raw.json()["error"]["param"] == "text.format"
    answer = client.chat.completions.create(model="tiny-target", messages=PROMPT, max_tokens=5)
    assert answer.choices[0].finish_reason in ("stop", "length")


def test_responses_and_anthropic_ask_for_the_same_constraint(client: openai.OpenAI, tiny_url: str) -> None:
    expected = client.chat.completions.create(model="tiny-target", messages=PROMPT, response_format=FORMAT, max_tokens=120)
    text = expected.choices[0].message.content
    response = client.responses.create(model="tiny-target", input=PROMPT[0]["content"], max_output_tokens=120,
                                       text={"format": {"type": "json_schema", "name": "city", "schema": SCHEMA}})
    assert response.output_text == text
    message = httpx.post(tiny_url + "/v1/messages", json={"model": "tiny-target", "max_tokens": 120, "messages": PROMPT,
                                                          "output_format": {"type": "json_schema", "schema": SCHEMA}})
    assert message.json()["content"][0]["text"] == text


def test_anthropics_messages_parse_sends_output_config_format_and_gets_its_model_back(tiny_url: str) -> None:
    """The anthropic SDK's `messages.parse(output_format=Model)` (and Claude Code's title request) send the schema
    as `output_config.format`; it was ignored and prose came back."""
    import anthropic

    class Title(BaseModel):  # closed fields: the SDK moves bounds into descriptions, and random weights write on
        mood: Literal["calm", "stormy"]
        sunny: bool

    client = anthropic.Anthropic(base_url=tiny_url, api_key="unused", max_retries=0)
    parsed = client.messages.parse(model="tiny-target", max_tokens=60, messages=PROMPT, output_format=Title)
    assert isinstance(parsed.parsed_output, Title)
