"""Images through the server: OpenAI image_url, Anthropic image blocks, Responses input_image, with the official
clients, against the tiny vision model; a text-only target answers each API's 400."""

from __future__ import annotations

import base64
from pathlib import Path

import anthropic
import openai
import pytest

from engine.decoding.pair import ModelPair
from engine.serving.generation_queue import EngineThread
from tests.engine.serving.scripted import serving

QUESTION = "What is in the image?"


@pytest.fixture(scope="module")
def vision_url(vision_dir: Path, vision_draft):
    engine = EngineThread(lambda: ModelPair.load(str(vision_dir), str(vision_draft.path)), str(vision_dir))
    engine.start()
    try:
        with serving(engine) as url:
            yield url
    finally:
        engine.stop()


def _model(url: str) -> str:
    """The name the server serves its target under."""
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0).models.list().data[0].id


def _data(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _openai(url: str, image: Path) -> str:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    content = [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_data(image)}"}},
               {"type": "text", "text": QUESTION}]
    reply = client.chat.completions.create(model=_model(url), messages=[{"role": "user", "content": content}], max_tokens=16)
    return reply.choices[0].message.content


def _anthropic(url: str, image: Path) -> str:
    client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
    content = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _data(image)}},
               {"type": "text", "text": QUESTION}]
    reply = client.messages.create(model=_model(url), max_tokens=16, messages=[{"role": "user", "content": content}])
    return "".join(block.text for block in reply.content if block.type == "text")


def _responses(url: str, image: Path) -> str:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    content = [{"type": "input_image", "image_url": f"data:image/png;base64,{_data(image)}"},
               {"type": "input_text", "text": QUESTION}]
    return client.responses.create(model=_model(url), input=[{"role": "user", "content": content}], max_output_tokens=16).output_text


ASKS = {"openai": _openai, "anthropic": _anthropic, "responses": _responses}


def test_every_api_shows_the_image_and_they_answer_alike(vision_url: str, vision_images: list[Path]) -> None:
    answers = {name: [ask(vision_url, image) for image in vision_images] for name, ask in ASKS.items()}
    assert answers["openai"] == answers["anthropic"] == answers["responses"]
    assert answers["openai"][0] != answers["openai"][1]  # two images, two answers


@pytest.mark.parametrize("api", ASKS)
def test_a_text_only_target_refuses_an_image_with_a_400(api: str, tiny_url: str, vision_images: list[Path]) -> None:
    error = anthropic.BadRequestError if api == "anthropic" else openai.BadRequestError
    with pytest.raises(error, match="cannot see images; pick a vision model such as") as refused:
        ASKS[api](tiny_url, vision_images[0])
    assert refused.value.status_code == 400


def test_an_image_by_url_is_refused_asking_for_inline_data(vision_url: str) -> None:
    client = openai.OpenAI(base_url=f"{vision_url}/v1", api_key="unused", max_retries=0)
    content = [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}, {"type": "text", "text": "?"}]
    with pytest.raises(openai.BadRequestError, match="inline as a base64 data URL"):
        client.chat.completions.create(model=_model(vision_url), messages=[{"role": "user", "content": content}],
                                       max_tokens=4)
