"""A job's output as the server hands it on: a thinking model's reasoning apart from its answer, the answer alone
split into text and tool calls, and every part adding up to what the engine's result holds."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from engine.events import GenerationResult, GenerationStats, Part, TokenEvent
from engine.serving.generation_queue import GenerationJob, run_job
from engine.serving.pieces import ReasoningPiece, TextPiece, ToolCall
from engine.serving.tool_calls import ToolChoice, Tooling
from tests.engine.serving.scripted import GREEDY, WEATHER_CALL, WEATHER_TOOL


def _run(tokenizer: Any, script: list[tuple[str, Part]], answer: str, reasoning: str,
         tooling: Tooling | None = None) -> list[object]:
    """What `run_job` delivers for a generation that streams `script` ((text, part) per token) and ends with the
    result's `answer` and `reasoning` (which may hold what the detokenizers released only at the end)."""
    def stream(pair: Any, prompt: Any, params: Any, **_: Any) -> Iterator[object]:
        for i, (text, part) in enumerate(script):
            yield TokenEvent(i, text, "target", i, part)
        parts = [part for _, part in script]
        yield GenerationResult(answer, list(range(len(script))), ["target"] * len(script), "standard", "stop",
                               GenerationStats(), reasoning=reasoning, parts=parts)

    delivered: list[object] = []
    job = GenerationJob([{"role": "user", "content": "Hi"}], True, GREEDY, delivered.append, tooling=tooling)
    run_job(SimpleNamespace(tokenizer=tokenizer), job, stream=stream)
    return delivered


def _pieces(delivered: list[object], kind: type) -> list[Any]:
    return [event for event in delivered if isinstance(event, kind)]


def test_a_call_written_in_the_reasoning_is_not_a_call(tool_target) -> None:
    script = [("I could write ", "reasoning"), (WEATHER_CALL, "reasoning"), ("", "marker"), ("It is sunny.", "answer")]
    delivered = _run(tool_target.tokenizer, script, "It is sunny.", "I could write " + WEATHER_CALL,
                     Tooling([WEATHER_TOOL], ToolChoice("auto")))
    assert _pieces(delivered, ToolCall) == []
    assert "".join(p.text for p in _pieces(delivered, ReasoningPiece)) == "I could write " + WEATHER_CALL
    assert "".join(p.text for p in _pieces(delivered, TextPiece)) == "It is sunny."


def test_a_call_in_the_answer_after_reasoning_is_still_made(tool_target) -> None:
    script = [("Paris: ask the tool.", "reasoning"), ("", "marker"), (WEATHER_CALL, "answer")]
    delivered = _run(tool_target.tokenizer, script, WEATHER_CALL, "Paris: ask the tool.",
                     Tooling([WEATHER_TOOL], ToolChoice("auto")))
    assert [(call.name, call.arguments_object()) for call in _pieces(delivered, ToolCall)] == [("get_weather", {"city": "Paris"})]


def test_the_answers_end_is_taken_from_the_answer_not_from_all_the_text(tiny_target) -> None:
    # The result's answer ends with text its detokenizer released only at the end: it is the answer's rest.
    script = [("Thinking long", "reasoning"), ("", "marker"), ("Hi", "answer")]
    delivered = _run(tiny_target.tokenizer, script, "Hi there", "Thinking long")
    assert "".join(p.text for p in _pieces(delivered, TextPiece)) == "Hi there"
    assert isinstance(delivered[-1], GenerationResult)  # every piece comes before the result


def test_the_streamed_reasoning_adds_up_to_the_results_without_its_blank_edges(tiny_target) -> None:
    script = [("\n", "reasoning"), ("Think", "reasoning"), (" hard", "reasoning"), ("\n", "reasoning"),
              ("\n", "reasoning"), ("", "marker"), ("Yes.", "answer")]
    delivered = _run(tiny_target.tokenizer, script, "Yes.", "Think hard")  # the engine strips its reasoning
    assert [p.text for p in _pieces(delivered, ReasoningPiece)] == ["Think", " hard"]
    blank_inside = [("A", "reasoning"), (" ", "reasoning"), ("\n", "reasoning"), ("B", "reasoning")]
    delivered = _run(tiny_target.tokenizer, blank_inside, "", "A \nB")
    assert [p.text for p in _pieces(delivered, ReasoningPiece)] == ["A", " \nB"]


def test_reasoning_released_only_at_the_end_arrives_before_the_result(tiny_target) -> None:
    # Cut mid-reasoning: the reasoning's detokenizer releases its last (incomplete) character at the end.
    delivered = _run(tiny_target.tokenizer, [("Think", "reasoning"), (" hard", "reasoning")], "", "Think hard\ufffd")
    assert [p.text for p in _pieces(delivered, ReasoningPiece)] == ["Think", " hard", "\ufffd"]
    assert isinstance(delivered[-1], GenerationResult)


def test_stopping_the_engine_lets_the_pair_go_on_the_thread_that_owns_it() -> None:
    """`ModelPair.close` writes the prefixes kept in memory to disk: MLX work, done on the engine's own thread."""
    import threading

    from engine.serving.generation_queue import EngineThread

    closed: list[str] = []
    pair = SimpleNamespace(target=SimpleNamespace(display_name="tiny"),
                           close=lambda: closed.append(threading.current_thread().name))
    engine = EngineThread(lambda: pair, "tiny")
    engine.start()
    assert closed == []
    engine.stop()
    assert closed == ["specchat-engine"]


def test_stopping_waits_for_the_prompt_cache_files_and_says_so(tmp_path) -> None:
    """The prefixes going to disk at shutdown are waited for however long they take (not a fixed grace), with a line
    naming where they go: `close` here finishes only once that line was said, so a stop that returned earlier, or
    said nothing, fails."""
    import threading

    from engine.serving.generation_queue import EngineThread

    said, lines, closed = threading.Event(), [], []

    def close() -> None:
        if said.wait(timeout=60):  # a guard against hanging, not a timing: the line comes while the files are written
            closed.append(True)

    pair = SimpleNamespace(target=SimpleNamespace(display_name="tiny"), close=close,
                           prompt_cache=SimpleNamespace(disk=SimpleNamespace(path=tmp_path)))
    engine = EngineThread(lambda: pair, "tiny")
    engine.start()
    engine.stop(log=lambda line: (lines.append(line), said.set()))
    assert closed == [True]
    assert len(lines) == 1 and str(tmp_path) in lines[0] and "Ctrl-C" in lines[0]


def test_stopping_without_a_disk_says_nothing() -> None:
    from engine.serving.generation_queue import EngineThread

    closed, lines = [], []
    pair = SimpleNamespace(target=SimpleNamespace(display_name="tiny"), close=lambda: closed.append(True),
                           prompt_cache=SimpleNamespace(disk=None))
    engine = EngineThread(lambda: pair, "tiny")
    engine.start()
    engine.stop(log=lines.append)
    assert closed == [True] and lines == []


def test_a_stop_while_the_pair_loads_returns_at_once_and_says_the_work_goes_on() -> None:
    """Ctrl-C during a load need not wait for it, but the caller must know the thread still works in MLX (`ended`):
    the CLI then quits without tearing the interpreter down under it (test_main.py runs that)."""
    import threading

    from engine.serving.generation_queue import EngineThread

    loading, loaded, closed = threading.Event(), threading.Event(), threading.Event()
    pair = SimpleNamespace(target=SimpleNamespace(display_name="tiny"), close=closed.set)
    engine = EngineThread(lambda: (loading.set(), loaded.wait(60), pair)[-1], "tiny")
    threading.Thread(target=engine.start, daemon=True).start()
    assert loading.wait(60)
    engine.stop()
    assert not engine.ended
    loaded.set()
    assert closed.wait(60)  # the stop asked for is seen once the load ends: the pair is let go


def test_a_suffix_asks_for_the_middle_and_ends_it_at_the_format_s_ends(tmp_path) -> None:
    """Completions' suffix: the job generates from the fill-in-the-middle prompt, ending at its end tokens."""
    from mlx_lm.utils import load_tokenizer

    from engine.decoding.fill_in_middle import fim_end_ids, fim_prompt_ids
    from engine.fixtures.tiny_models import build_tokenizer

    tokenizer = load_tokenizer(build_tokenizer(tmp_path / "fim", extra_special=("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")))
    asked: list[tuple[Any, Any]] = []

    def stream(pair: Any, prompt: Any, params: Any, *, end_ids: frozenset[int], **_: Any) -> Iterator[object]:
        asked.append((prompt, end_ids))
        yield GenerationResult("a + b", [1], ["target"], "standard", "stop", GenerationStats())

    delivered: list[object] = []
    job = GenerationJob("def add(a, b):\n    return ", False, GREEDY, delivered.append, suffix="\n")
    run_job(SimpleNamespace(tokenizer=tokenizer), job, stream=stream)
    assert asked == [(fim_prompt_ids(tokenizer, "def add(a, b):\n    return ", "\n"), fim_end_ids(tokenizer))]
    assert "".join(p.text for p in _pieces(delivered, TextPiece)) == "a + b"
