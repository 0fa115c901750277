"""The OpenAI-compatible server, driven by the official `openai` client and raw HTTP, on the tiny pair.

The server's engine thread loads its own pair and generates on it; references are computed with the
engine's own `generate` on the test's pair. Greedy, so the texts must match token for token.
"""

from __future__ import annotations

import threading
import time

import httpx
import openai
import pytest

from engine.decoding.generation import generate
from engine.decoding.pair import ModelPair
from engine.params import GenerationParams
from engine.serving.generation_queue import EngineThread, GenerationJob
from engine.serving.listener import RunningServer, bind
from engine.serving.server import create_app
from tests.helpers import agent_request

GREEDY = GenerationParams.preset("greedy", drafter="model", num_draft=3)
QUESTION = [{"role": "user", "content": "Tell me about the sea."}]


class RecordingRunner:
    """The engine thread, keeping every job it was given (to look at cancellations)."""

    def __init__(self, engine: EngineThread) -> None:
        self.engine = engine
        self.jobs: list[GenerationJob] = []

    def submit(self, job: GenerationJob) -> None:
        self.jobs.append(job)
        self.engine.submit(job)

    def model_ids(self) -> list[str]:
        return self.engine.model_ids()


@pytest.fixture(scope="module")
def engine(tiny_dirs):
    engine = EngineThread(lambda: ModelPair.load(str(tiny_dirs[0]), str(tiny_dirs[1])), str(tiny_dirs[0]))
    engine.start()
    yield RecordingRunner(engine)
    engine.stop()


def serve(runner, **options) -> RunningServer:
    server = RunningServer(create_app(runner, GREEDY, **options), bind("127.0.0.1", 0))
    server.start()
    return server


@pytest.fixture(scope="module")
def server(engine):
    server = serve(engine)
    yield server
    server.stop()


@pytest.fixture
def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused", max_retries=0)


def url(server: RunningServer, path: str) -> str:
    return f"http://127.0.0.1:{server.port}{path}"


def reference(tiny_pair, prompt, max_tokens: int, chat: bool = True):
    return generate(prompt, tiny_pair, GREEDY.replace(max_tokens=max_tokens), chat=chat)


def test_models_lists_the_target_by_name_and_by_path(client, tiny_dirs) -> None:
    ids = [m.id for m in client.models.list().data]
    assert ids == [tiny_dirs[0].name, str(tiny_dirs[0])]


def test_chat_completion_equals_the_engines_own_generate_with_stats(client, tiny_pair) -> None:
    expected = reference(tiny_pair, QUESTION, 24)
    response = client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=24, temperature=0)
    assert response.choices[0].message.content == expected.text
    assert response.choices[0].finish_reason == ("stop" if expected.finish_reason == "stop" else "length")
    assert response.usage.completion_tokens == len(expected.tokens) and response.usage.prompt_tokens == expected.stats.prompt_tokens
    spec = response.model_extra["speculation"]
    assert spec["drafter"] == "model" and spec["drafted"] >= spec["accepted"] > 0
    ended_on_eos = expected.finish_reason == "stop"  # no stop strings here: the end-of-sequence token, a pass's too
    assert spec["tokens_per_pass"] == pytest.approx((response.usage.completion_tokens + ended_on_eos) / spec["rounds"], abs=1e-3)


def test_streamed_chat_deltas_join_to_the_same_text_and_end_with_stats(client, tiny_pair) -> None:
    expected = reference(tiny_pair, QUESTION, 30)
    chunks = list(client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=30, stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == expected.text
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finish) == 1 and finish[0].model_extra["speculation"]["rounds"] > 0
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == len(expected.tokens)
    assert len({c.id for c in chunks}) == 1


def test_completions_streamed_and_not_equal_generate_without_the_chat_template(client, tiny_pair) -> None:
    expected = reference(tiny_pair, "The sea is", 20, chat=False)
    whole = client.completions.create(model="tiny-target", prompt="The sea is", max_tokens=20)
    assert whole.choices[0].text == expected.text and whole.usage.completion_tokens == len(expected.tokens)
    streamed = client.completions.create(model="tiny-target", prompt="The sea is", max_tokens=20, stream=True)
    assert "".join(c.choices[0].text for c in streamed) == expected.text


def test_a_completion_of_token_ids_equals_the_completion_of_their_text(client, tiny_pair) -> None:
    """OpenAI's completions take the prompt as token ids too (evaluation harnesses tokenize their own way)."""
    ids = tiny_pair.target.tokenizer.encode("The sea is")
    expected = generate(ids, tiny_pair, GREEDY.replace(max_tokens=20), chat=False)
    answer = client.completions.create(model="tiny-target", prompt=ids, max_tokens=20, temperature=0)
    assert answer.choices[0].text == expected.text and answer.usage.prompt_tokens == len(ids)
    with pytest.raises(openai.BadRequestError, match=f"token id {tiny_pair.vocab_width}, which this model does not have"):
        client.completions.create(model="tiny-target", prompt=[*ids, tiny_pair.vocab_width], max_tokens=4)
    assert client.completions.create(model="tiny-target", prompt=ids, max_tokens=3).choices[0].text  # still serving


def test_openai_penalties_and_logit_bias_shape_the_answer_as_generate_does(client, tiny_pair) -> None:
    """They were named in a warning and not applied; a +100 bias on one token makes every token it."""
    ids = tiny_pair.target.tokenizer.encode("The sea is")
    settings = {"presence_penalty": 1.2, "frequency_penalty": 0.6, "logit_bias": {7: 2.5}}
    expected = generate(ids, tiny_pair, GREEDY.replace(max_tokens=12, **settings), chat=False)
    answer = client.completions.create(model="tiny-target", prompt=ids, max_tokens=12, temperature=0, presence_penalty=1.2,
                                       frequency_penalty=0.6, logit_bias={"7": 2.5})
    assert answer.choices[0].text == expected.text != generate(ids, tiny_pair, GREEDY.replace(max_tokens=12), chat=False).text
    forced = client.completions.create(model="tiny-target", prompt=ids, max_tokens=4, temperature=0, logit_bias={"9": 100})
    assert forced.choices[0].text == tiny_pair.target.tokenizer.decode([9] * 4)
    with pytest.raises(openai.BadRequestError, match=f"logit_bias names token {tiny_pair.vocab_width}, which this model does not have"):
        client.completions.create(model="tiny-target", prompt=ids, max_tokens=2, logit_bias={str(tiny_pair.vocab_width): 1})
    with pytest.raises(openai.BadRequestError, match="'logit_bias' must map token ids"):
        client.completions.create(model="tiny-target", prompt=ids, max_tokens=2, logit_bias={"seven": 1})
    with pytest.raises(openai.BadRequestError, match="presence_penalty must be between -2 and 2"):
        client.completions.create(model="tiny-target", prompt=ids, max_tokens=2, presence_penalty=2.5)


def test_our_extra_fields_choose_standard_decoding(client, tiny_pair) -> None:
    expected = reference(tiny_pair, QUESTION, 16)
    response = client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=16,
                                              extra_body={"mode": "standard"})
    assert response.choices[0].message.content == expected.text
    assert response.model_extra["speculation"]["drafted"] == 0 and response.model_extra["speculation"]["mode"] == "standard"


def test_a_stop_string_ends_the_answer_before_it(client, tiny_pair) -> None:
    full = reference(tiny_pair, QUESTION, 24).text
    stop = full[len(full) // 2 :][:3]
    response = client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=24, stop=[stop])
    assert response.choices[0].message.content == full[: full.index(stop)]
    assert response.choices[0].finish_reason == "stop"


def test_lenience_as_an_extra_field_is_reported_lossy(client) -> None:
    response = client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=12, temperature=1,
                                              extra_body={"lenience": 1.0, "adaptive": False})
    spec = response.model_extra["speculation"]
    assert spec["lossy"] is True and spec["lenience"] == 1.0 and spec["accepted"] == spec["drafted"] > 0


@pytest.mark.parametrize(
    "body, status, code",
    [
        (b"{bad", 400, None),
        (b'{"model": "tiny-target"}', 400, None),
        (b'{"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]}', 404, "model_not_found"),
        (b'{"messages": [{"role": "user", "content": "x"}], "temperature": -1}', 400, "invalid_value"),
        (b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": "many"}', 400, None),
    ],
)
def test_each_bad_request_gets_its_status_and_an_openai_error_body(server, body, status, code) -> None:
    response = httpx.post(url(server, "/v1/chat/completions"), content=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and "Traceback" not in response.text


def test_a_prompt_longer_than_the_context_is_a_400_streamed_or_not(client) -> None:
    long = [{"role": "user", "content": "word " * 1100}]
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="tiny-target", messages=long, max_tokens=4, stream=stream)
        assert caught.value.code == "context_length_exceeded"


def test_unknown_routes_and_methods_answer_in_the_error_shape(server) -> None:
    missing = httpx.get(url(server, "/v2/engines"))
    wrong = httpx.get(url(server, "/v1/chat/completions"))
    assert (missing.status_code, wrong.status_code) == (404, 405)
    assert missing.json()["error"]["message"] and wrong.json()["error"]["message"]


def test_the_server_keeps_serving_after_bad_requests(server, client) -> None:
    httpx.post(url(server, "/v1/chat/completions"), content=b"\xff\xfe")
    health = httpx.get(url(server, "/health")).json()
    assert health["status"] == "ok" and not health["busy"]
    assert client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=3).choices[0].message.content


def test_a_key_is_required_when_set(engine) -> None:
    keyed = serve(engine, api_key="s3cret")
    try:
        base = f"http://127.0.0.1:{keyed.port}/v1"
        with pytest.raises(openai.AuthenticationError) as caught:
            openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list()
        assert caught.value.code == "invalid_api_key"
        assert httpx.post(base + "/chat/completions", json={"messages": QUESTION}).status_code == 401
        assert openai.OpenAI(base_url=base, api_key="s3cret").models.list().data
    finally:
        keyed.stop()


def test_a_client_that_disconnects_mid_stream_frees_the_model_within_one_round(server, engine, client) -> None:
    body = {"messages": QUESTION, "max_tokens": 900, "stream": True, "extra": 1}
    with httpx.stream("POST", url(server, "/v1/chat/completions"), json=body, timeout=30) as response:
        lines = response.iter_lines()
        for _ in range(4):
            next(lines)
    job = engine.jobs[-1]
    assert _eventually(lambda: not httpx.get(url(server, "/health")).json()["busy"])
    assert job.cancelled.is_set() and job.rounds_after_cancel <= 1
    assert client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=3).choices[0].message.content


class BlockedRunner:
    """A runner that holds every job until released: the queue fills."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def submit(self, job: GenerationJob) -> None:
        def finish() -> None:
            self.release.wait(10)
            job.deliver(RuntimeError("released"))

        threading.Thread(target=finish, daemon=True).start()

    def model_ids(self) -> list[str]:
        return ["blocked"]


def test_a_full_queue_answers_503_with_retry_after() -> None:
    runner = BlockedRunner()
    server = serve(runner, max_waiting=1)
    try:
        held = [threading.Thread(target=httpx.post, args=(url(server, "/v1/completions"),),
                                 kwargs={"json": {"prompt": "a"}, "timeout": 20}) for _ in range(2)]
        for thread in held:
            thread.start()
        assert _eventually(lambda: httpx.get(url(server, "/health")).json()["waiting"] == 1)
        refused = httpx.post(url(server, "/v1/completions"), json={"prompt": "a"})
        assert refused.status_code == 503 and refused.headers["retry-after"].isdigit()
        assert refused.json()["error"]["code"] == "queue_full"
    finally:
        runner.release.set()
        server.stop()


def test_an_unexpected_failure_is_a_500_without_a_traceback() -> None:
    runner = BlockedRunner()
    runner.release.set()
    server = serve(runner)
    try:
        response = httpx.post(url(server, "/v1/completions"), json={"prompt": "a"})
        assert response.status_code == 500 and response.json()["error"]["type"] == "server_error"
        assert "released" not in response.text and "Traceback" not in response.text
    finally:
        server.stop()


def _eventually(condition, timeout: float = 60.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_three_seeded_adaptive_requests_give_one_text(client) -> None:
    """Issue 27: at T = 0.9 with a seed, the default adaptive mode gave 3 different texts in 3 requests, since the
    policy (kept with the pair, learning on) drew a different number of random numbers per round each time."""
    texts = {
        client.chat.completions.create(
            model="tiny-target", messages=QUESTION, max_tokens=40, temperature=0.9, top_p=0.95, seed=42,
            extra_body={"adaptive": True, "drafter": "model+lookup"},
        ).choices[0].message.content
        for _ in range(3)
    }
    assert len(texts) == 1
    other = client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=40, temperature=0.9,
                                           top_p=0.95, seed=43, extra_body={"adaptive": True})
    assert other.choices[0].message.content not in texts  # the seed, not the server, decides


def test_the_speculation_object_carries_the_policy_s_belief(client) -> None:
    """Issue 27: why did it stop drafting? The adaptive policy's estimates, predictions per K and reason."""
    adaptive = client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=24,
                                              extra_body={"adaptive": True})
    [belief] = adaptive.model_extra["speculation"]["policy"]
    assert belief["drafter"] == "model" and belief["reason"] and 0 <= belief["acceptance"] <= 1
    assert belief["verified_tokens"] > 0 and 0 <= belief["chosen_k"] < len(belief["predicted_tps"])
    fixed = client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=8,
                                           extra_body={"adaptive": False})
    assert fixed.model_extra["speculation"]["policy"] == []


def test_serving_an_adapter_folder_is_one_line_naming_it(tmp_path, capsys) -> None:
    """`serve` loads on its engine thread and raises the load error on the caller's: the same one line."""
    from engine.cli.main import main
    from tests.model_folders import peft_lora_adapter

    adapter = peft_lora_adapter(tmp_path / "qwen-lora")
    assert main(["serve", "--target", str(adapter), "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("error: qwen-lora is a LoRA adapter for Qwen/Qwen2.5-0.5B-Instruct, not a model: ")


def test_unknown_routes_answer_in_the_shape_of_the_api_they_are_under(server) -> None:
    """Anthropic's clients parse `{"type": "error", "error": {...}}`, OpenAI's `{"error": {...}}`."""
    batches = httpx.post(url(server, "/v1/messages/batches"), json={})
    assert batches.status_code == 404 and batches.json()["error"]["type"] == "not_found_error"
    wrong = httpx.get(url(server, "/v1/responses"))
    assert wrong.status_code == 405 and wrong.json()["error"]["message"] and "type" not in wrong.json()


@pytest.mark.parametrize("drafter_kind", ["dflash", "dspark"])
def test_a_request_drafts_with_the_block_drafter_loaded_as_the_draft(dflash_pairs, drafter_kind: str) -> None:
    """`serve --draft DFLASH_FOLDER` (or a DSpark folder): a request naming drafter "dflash" ("dspark") drafts with
    it, and the text is the target's."""
    folders = dflash_pairs.folders if drafter_kind == "dflash" else dflash_pairs.dspark_folders
    target, drafter = (str(folder) for folder in folders("qwen3_5"))
    engine = EngineThread(lambda: ModelPair.load(target, drafter), target)
    engine.start()
    server = RunningServer(create_app(RecordingRunner(engine), GREEDY), bind("127.0.0.1", 0))
    server.start()
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused", max_retries=0)
        response = client.chat.completions.create(model="tiny-qwen3_5", messages=[{"role": "user", "content": "abcabd"}],
                                                  max_tokens=30, temperature=0, extra_body={"drafter": drafter_kind})
    finally:
        server.stop()
        engine.stop()
    expected = generate("abcabd", ModelPair(dflash_pairs.target("qwen3_5")), GREEDY.replace(mode="standard", max_tokens=30))
    assert response.choices[0].message.content == expected.text
    spec = response.model_extra["speculation"]
    assert spec["drafter"] == drafter_kind and spec["drafted"] > 0


@pytest.mark.parametrize("path, shape", [("/v1/chat/completions", "error"), ("/v1/completions", "error"),
                                         ("/v1/responses", "error"), ("/v1/messages", "type")])
def test_a_lone_surrogate_is_a_400_in_the_apis_own_shape(server, path, shape) -> None:
    """JSON's \\ud800 escape decodes to a lone surrogate, which the tokenizer failed on with a 500 and a traceback."""
    raw = b'{"model": "x", "max_tokens": 3, "prompt": "a\\ud800", "input": "a\\ud800", "messages": [{"role": "user", "content": "a\\ud800"}]}'
    response = httpx.post(url(server, path), content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400 and "surrogate" in response.text and shape in response.json()


def test_a_request_whose_client_goes_away_leaves_a_line_in_the_log(engine) -> None:
    lines: list = []
    logged = threading.Event()
    server = serve(engine, log=lambda record: (lines.append(record.line()), logged.set()))
    try:
        body = {"messages": QUESTION, "max_tokens": 900, "stream": True}
        with httpx.stream("POST", url(server, "/v1/chat/completions"), json=body, timeout=30) as response:
            next(response.iter_lines())
        assert logged.wait(30)
    finally:
        server.stop()
    assert "499" in lines[0] and "cancelled: the client went away" in lines[0]


class GatedRunner:
    """Holds each job (as a queue behind a long job would) until the test opens the gate, then scripts it."""

    def __init__(self, runner) -> None:
        self.runner, self.gate = runner, threading.Event()

    def submit(self, job: GenerationJob) -> None:
        threading.Thread(target=lambda: (self.gate.wait(30), self.runner.submit(job)), daemon=True).start()

    def model_ids(self) -> list[str]:
        return self.runner.model_ids()


@pytest.mark.parametrize("path, body, last", [
    ("/v1/messages", {"max_tokens": 9, "messages": QUESTION, "stream": True}, "event: message_stop"),
    ("/v1/chat/completions", {"messages": QUESTION, "stream": True}, "data: [DONE]"),
    ("/v1/responses", {"input": "Hi", "stream": True}, "event: response.completed"),
])
def test_a_waiting_stream_sends_its_head_and_keep_alives_before_the_job_starts(tool_target, path, body, last) -> None:
    """Claude Code drops a connection silent for 5 minutes (a long queue, a long prefill) and retries."""
    from tests.engine.serving.scripted import ScriptedRunner

    runner = GatedRunner(ScriptedRunner(tool_target.tokenizer, ["Calm seas."]))
    server = RunningServer(create_app(runner, GREEDY, keepalive_s=0.05), bind("127.0.0.1", 0))
    server.start()
    try:
        with httpx.stream("POST", url(server, path), json=body, timeout=30) as response:
            lines = response.iter_lines()
            assert response.status_code == 200 and next(lines) == ": keep-alive"
            runner.gate.set()
            rest = [line for line in lines if line]
    finally:
        server.stop()
    assert last in rest and not any(line == "event: error" or line.startswith('data: {"error"') for line in rest)


def test_the_prompt_caches_tokens_are_reported_as_cached_tokens(client) -> None:
    usages = [client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=2).usage for _ in range(2)]
    assert usages[1].prompt_tokens_details.cached_tokens > 0 and usages[1].prompt_tokens == usages[0].prompt_tokens


def test_a_request_without_a_drafter_runs_automatic_by_default(engine) -> None:
    """Issue 31: `serve --target T --draft D` and a request that names no drafter: Automatic, which says what it
    chose and why; a request may still pin one."""
    from engine.cli.main import _params, build_parser

    defaults = _params(build_parser().parse_args(["serve", "--target", "t", "--draft", "d"]), mode="speculative")
    assert defaults.drafter == "auto"
    server = RunningServer(create_app(engine, defaults.replace(temperature=0.0)), bind("127.0.0.1", 0))
    server.start()
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused", max_retries=0)
        spec = client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=24).model_extra["speculation"]
        assert spec["drafter"] == "auto" and spec["policy"][0]["drafter"] == "auto" and spec["policy"][0]["reason"]
        pinned = client.chat.completions.create(model="tiny-target", messages=QUESTION, max_tokens=8,
                                                extra_body={"drafter": "lookup"}).model_extra["speculation"]
        assert pinned["drafter"] == "lookup"
    finally:
        server.stop()


def test_an_agent_returning_after_another_prompt_is_reported_as_cached(client) -> None:
    """Prompts A, B, A: the third is read from the prefix the prompt cache shelved when B came."""
    main, title = agent_request("main"), agent_request("title")
    usages = [client.chat.completions.create(model="tiny-target", messages=m, max_tokens=2).usage for m in (main, title, main)]
    assert usages[1].prompt_tokens_details.cached_tokens < 20
    assert usages[2].prompt_tokens_details.cached_tokens == usages[2].prompt_tokens - 1 > 100
