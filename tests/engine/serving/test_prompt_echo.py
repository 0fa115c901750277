"""Completions' echo: the prompt in front of the answer, with its tokens' scores when logprobs are asked for, whole
and streamed; refused for chat completions."""

from __future__ import annotations

import openai
import pytest

from engine.decoding.generation import generate
from engine.decoding.prompt_scores import score_prompt
from engine.params import GenerationParams
from engine.serving.api_error import ApiError
from engine.serving.prompt_echo import echo_requested

PROMPT = "The sea is deep and the sea is"


@pytest.fixture
def client(tiny_url) -> openai.OpenAI:
    return openai.OpenAI(base_url=tiny_url + "/v1", api_key="unused", max_retries=0)


def answer_text(tiny_pair, prompt: str | list[int], max_tokens: int) -> str:
    return generate(prompt, tiny_pair, GenerationParams.preset("greedy", max_tokens=max_tokens), chat=False).text


def test_echo_is_read_for_completions_and_refused_for_chat() -> None:
    assert echo_requested({"echo": True}, "completions") and not echo_requested({}, "completions")
    for body, endpoint in (({"echo": True}, "chat"), ({"echo": "yes"}, "completions")):
        with pytest.raises(ApiError) as refused:
            echo_requested(body, endpoint)
        assert (refused.value.status, refused.value.param) == (400, "echo")


def test_the_prompt_comes_back_in_front_of_the_answer(client, tiny_pair) -> None:
    answer = client.completions.create(model="tiny-target", prompt=PROMPT, max_tokens=6, temperature=0, echo=True)
    assert answer.choices[0].text == PROMPT + answer_text(tiny_pair, PROMPT, 6)
    ids = tiny_pair.target.tokenizer.encode(PROMPT)
    by_ids = client.completions.create(model="tiny-target", prompt=ids, max_tokens=6, temperature=0, echo=True)
    assert by_ids.choices[0].text == tiny_pair.target.tokenizer.decode(ids) + answer_text(tiny_pair, ids, 6)


def test_with_logprobs_each_prompt_token_is_scored_and_the_answer_s_follow(client, tiny_pair) -> None:
    """As lm-evaluation-harness reads them: one entry per prompt token (the first null), then the answer's."""
    ids = tiny_pair.target.tokenizer.encode(PROMPT)
    answer = client.completions.create(model="tiny-target", prompt=ids, max_tokens=4, temperature=0, echo=True, logprobs=2)
    figures = answer.choices[0].logprobs
    scores = score_prompt(tiny_pair, ids, 2)
    assert len(figures.tokens) == len(ids) + answer.usage.completion_tokens
    assert figures.token_logprobs[0] is None and figures.top_logprobs[0] is None
    assert figures.token_logprobs[1 : len(ids)] == pytest.approx([s.logprob for s in scores[1:]], abs=1e-5)
    assert all(len(top) == 2 for top in figures.top_logprobs[1:])
    assert figures.text_offset[0] == 0 and "".join(figures.tokens[: len(ids)]) == tiny_pair.target.tokenizer.decode(ids)
    assert [figures.text_offset[i + 1] - figures.text_offset[i] for i in range(3)] == [len(t) for t in figures.tokens[:3]]


def test_a_streamed_echo_starts_with_the_prompt_and_its_scores(client, tiny_pair) -> None:
    chunks = list(client.completions.create(model="tiny-target", prompt=PROMPT, max_tokens=5, temperature=0, echo=True,
                                            logprobs=0, stream=True))
    texts = [c.choices[0].text for c in chunks if c.choices]
    assert texts[0] == PROMPT and "".join(texts) == PROMPT + answer_text(tiny_pair, PROMPT, 5)
    first = chunks[0].choices[0].logprobs
    assert first.token_logprobs[0] is None and len(first.tokens) == len(tiny_pair.target.tokenizer.encode(PROMPT))


def test_chat_completions_refuse_echo(client) -> None:
    with pytest.raises(openai.BadRequestError, match="'echo' is a field of completions"):
        client.chat.completions.create(model="tiny-target", messages=[{"role": "user", "content": "Hi"}], max_tokens=2,
                                       extra_body={"echo": True})


def test_lm_evaluation_harness_reads_a_continuation_s_loglikelihood(tiny_url, tiny_pair) -> None:
    """lm-evaluation-harness 0.4's local-completions, as it asks (a batch of one prompt of ids, one token, echo,
    logprobs 1) and as it reads: the continuation's logprobs are `token_logprobs[ctxlen:-1]` (the last is the
    generated token's), greedy when each is the best of its `top_logprobs`."""
    import httpx

    from tests.engine.decoding.test_logprobs import target_logprobs

    context = tiny_pair.target.tokenizer.encode("The capital of France is")
    continuation = tiny_pair.target.tokenizer.encode(" Paris, a city")
    body = {"model": "tiny-target", "prompt": [context + continuation], "temperature": 0, "max_tokens": 1, "logprobs": 1,
            "seed": 1234, "echo": True}
    choice = httpx.post(tiny_url + "/v1/completions", json=body, timeout=60).json()["choices"][0]
    ctxlen = len(context)
    read = choice["logprobs"]["token_logprobs"][ctxlen:-1]
    tops = choice["logprobs"]["top_logprobs"][ctxlen:-1]
    plain = target_logprobs(tiny_pair, context + continuation)
    expected = [plain[ctxlen - 1 + i][token] for i, token in enumerate(continuation)]
    assert read == pytest.approx(expected, abs=1e-4) and sum(read) == pytest.approx(sum(expected), abs=1e-3)
    greedy = all(plain[ctxlen - 1 + i].argmax() == token for i, token in enumerate(continuation))
    assert all(logprob == max(top.values()) for logprob, top in zip(read, tops)) == greedy
