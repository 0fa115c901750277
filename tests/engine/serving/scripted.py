"""A runner whose model writes what the test scripts, through the server's real job path.

Random weights never call a tool, so the tool-calling tests script the answer: each job's generation is the next
scripted text, tokenized and streamed token by token by the tiny tool model's real tokenizer (so `<tool_call>`
arrives as the one token it is), and `run_job` splits it with mlx-lm's parser as it splits a real model's output.
The prompt each job would have read is rendered with the real chat template and kept, to check what reached it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from engine.decoding.prompt_ids import prompt_token_ids
from engine.errors import PromptTooLongError
from engine.events import GenerationResult, GenerationStats, TokenEvent
from engine.params import GenerationParams
from engine.serving.generation_queue import GenerationJob, run_job
from engine.serving.listener import RunningServer, bind
from engine.serving.server import create_app

GREEDY = GenerationParams.preset("greedy", drafter="model", num_draft=3)


class ScriptedRunner:
    """Answers each job with the next scripted reply, or the one a function picks for its prompt (whole, or cut at
    the job's max_tokens)."""

    def __init__(self, tokenizer: Any, replies: list[str] | Callable[[str], str], model: str = "tiny-tools") -> None:
        self.tokenizer = tokenizer
        self.replies = replies if callable(replies) else list(replies)  # a function: the reply to each prompt's text
        self.prompts: list[str] = []
        self.jobs: list[GenerationJob] = []
        self._model = model
        self._lock = threading.Lock()
        self.context: int | None = None  # the prompt tokens the model reads at most; None: any number
        self.refused = 0  # the prompts refused as longer than `context`

    def submit(self, job: GenerationJob) -> None:
        self.jobs.append(job)
        threading.Thread(target=self._run, args=(job,), daemon=True).start()

    def _run(self, job: GenerationJob) -> None:
        with self._lock:  # one job at a time, as the engine thread runs them
            run_job(SimpleNamespace(tokenizer=self.tokenizer), job, stream=self._stream)

    def model_ids(self) -> list[str]:
        return [self._model]

    def _stream(self, pair: Any, prompt: Any, params: Any, *, chat: bool, cancel: Any, tools: Any,
                end_ids: frozenset[int]) -> Iterator[object]:
        prompt_ids = prompt_token_ids(self.tokenizer, prompt, chat=chat, tools=tools)
        self.prompts.append(self.tokenizer.decode(prompt_ids))
        if self.context is not None and len(prompt_ids) >= self.context:
            self.refused += 1
            return _too_long(len(prompt_ids), self.context, self._model)
        reply = self.replies(self.prompts[-1]) if callable(self.replies) else self.replies.pop(0)
        return stream_reply(self.tokenizer, reply, params.max_tokens, len(prompt_ids))


def _too_long(tokens: int, context: int, model: str) -> Iterator[object]:
    """The engine's refusal of a prompt longer than the context, raised as its stream starts."""
    raise PromptTooLongError(f"The prompt is {tokens} tokens but {model} reads at most {context}. Shorten it, or start a "
                             "new chat.", tokens, context)
    yield


def stream_reply(tokenizer: Any, reply: str, max_tokens: int, prompt_tokens: int) -> Iterator[object]:
    """`reply` as the engine would stream it, token by token (whole, or cut at `max_tokens`), then its result."""
    tokens = tokenizer.encode(reply, add_special_tokens=False)
    finish = "length" if len(tokens) > max_tokens else "stop"
    tokens = tokens[:max_tokens]
    detokenizer, texts = tokenizer.detokenizer, []
    for i, token in enumerate(tokens):
        detokenizer.add_token(token)
        texts.append(detokenizer.last_segment)
        yield TokenEvent(token, texts[-1], "target", i)
    detokenizer.finalize()
    stats = GenerationStats(prompt_tokens=prompt_tokens, generated_tokens=len(tokens), rounds=len(tokens))
    stats.ended_on_eos = finish == "stop"
    text = "".join(texts) + detokenizer.last_segment
    yield GenerationResult(text, tokens, ["target"] * len(tokens), "standard", finish, stats)  # type: ignore[arg-type]  # strings for Literals


@contextmanager
def serving(runner: Any, **options: Any) -> Iterator[str]:
    """The server over `runner` on a free loopback port, greedy by default; yields its base URL (without /v1)."""
    server = RunningServer(create_app(runner, options.pop("defaults", GREEDY), **options), bind("127.0.0.1", 0))
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        server.stop()


WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
WEATHER_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TIME_CALL = '<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n</tool_call>'
FINAL_ANSWER = "It is 22 degrees and sunny in Paris."
