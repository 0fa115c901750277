"""`specchat-cli benchmark`: reading the prompts, running the modes, and printing or plotting the report.

The measuring itself is in `benchmark.py` (single prompts), `conversation_benchmark.py` (chats, turn by turn) and
`agent_benchmark.py` (an agent's recorded requests, through the server's job path).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..errors import SpecChatError
from ..models.app_paths import RESOURCES
from ..params import GenerationParams
from .attach_option import attached

DEFAULT_PROMPTS = RESOURCES / "prompts" / "benchmark.json"


def _benchmark_prompts(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(prompt, category) pairs: --prompt values, then --prompt-file; the bundled set if neither is given."""
    prompts = [(p, "") for p in args.prompt]
    files = [args.prompt_file] if args.prompt_file else ([] if prompts else [DEFAULT_PROMPTS])
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise SpecChatError(f"Cannot read the prompt file {path}: {e.strerror}. Check the path.") from e
        if text.lstrip().startswith("["):
            try:
                entries = json.loads(text)
            except json.JSONDecodeError as e:
                raise SpecChatError(f"{path} is not valid JSON ({e.msg}, line {e.lineno}). Fix the file.") from e
            prompts += [(e["prompt"], e.get("category", "")) if isinstance(e, dict) else (str(e), "") for e in entries]
        else:
            prompts += [(line, "") for line in text.splitlines() if line.strip()]
    return prompts


def benchmark_command(args: argparse.Namespace, params: GenerationParams, out: TextIO) -> int:
    """`specchat-cli benchmark`: prompts, a conversation or an agent's session turn by turn; a table or the JSON
    report."""
    if args.iterations < 1:
        raise SpecChatError(f"--iterations must be at least 1, not {args.iterations}.")
    if args.conversation and args.agent:
        raise SpecChatError("Pass --conversation or --agent, not both: they are two benchmarks.")
    if args.scripted and (args.conversation or args.agent):
        raise SpecChatError("Scripted drafters draft single prompts: leave out --scripted, or --conversation and --agent.")
    if args.agent:
        report = _agent_report(args, params)
    else:
        report = _conversation_report(args, params) if args.conversation else _benchmark_report(args, params)
    _label_lossy(report, params)
    if args.plot:
        _plot_speedups(report, args.plot)
    if args.json:
        out.write(json.dumps(report) + "\n")
    else:
        _print_benchmark(report, out)
    return 0


def _label_lossy(report: dict, params: GenerationParams) -> None:
    """The lenient mode's summary says it is lossy, and at which lenience."""
    from .benchmark import mode_params

    if "lenient" in report["summary"]:
        report["summary"]["lenient"].update(lossy=True, lenience=mode_params("lenient", params).lenience)


def _benchmark_report(args: argparse.Namespace, params: GenerationParams) -> dict[str, object]:
    """Run the chosen modes on the prompts, alternating, and total the runs (the `--json` contract)."""
    from ..decoding.pair import ModelPair
    from .benchmark import check_modes, machine_info, measure_follow_up, run_benchmark, summarize, summarize_by_category
    from .scripted_drafters import register_scripted, script_drafters

    for path in args.scripted:  # each is a drafter kind and a mode of its own from here on
        register_scripted(path)
    try:
        modes = check_modes(args.modes.split(","), has_draft=bool(args.draft))
    except ValueError as e:
        raise SpecChatError(str(e)) from e
    prompts = _benchmark_prompts(args)
    categories = [c for _, c in prompts]
    pair = ModelPair.load(args.target, args.draft)
    prompt_ids = [pair.prompt_ids(attached(pair, args, p, params), chat=args.chat, system_prompt=args.system)
                  for p, _ in prompts]
    script_drafters(pair, args.scripted, prompt_ids, categories, params)

    def progress(run) -> None:
        if not args.json:
            print(
                f"  prompt {run.prompt_index} iteration {run.iteration} {run.mode:<20} "
                f"{run.tokens:4d} tokens {run.generation_tps:8.1f} tok/s",
                file=sys.stderr,
            )

    runs = run_benchmark(pair, prompt_ids, modes, params, args.iterations, on_run=progress, categories=categories)
    report: dict[str, object] = {
        "machine": machine_info(),
        "runs": [r.as_dict() for r in runs],
        "summary": summarize(runs),
        "categories": summarize_by_category(runs),
    }
    if args.follow_up:
        # The longest prompt (a text to edit or summarise): the case where re-reading the conversation hurts.
        longest = max(range(len(prompts)), key=lambda i: len(prompt_ids[i]))
        timing = measure_follow_up(pair, prompts[longest][0], "Now say that again in one sentence.", params.replace(mode="standard"))
        report["follow_up"] = dataclasses.asdict(timing)
    return report


def _plot_speedups(report: dict, path: Path) -> None:
    from .svg_chart import bar_chart

    groups = {"all prompts": report["summary"], **report["categories"]}
    speedups = {
        g: {m: s["speedup_vs_standard"] for m, s in summary.items() if s["speedup_vs_standard"] is not None}
        for g, summary in groups.items()
    }
    bar_chart("Tokens per second relative to standard decoding", speedups, 1.0, path)


def _print_benchmark(report: dict, out: TextIO) -> None:
    from .benchmark import format_table

    out.write(format_table(report["summary"]) + "\n")
    for mode, summary in report["summary"].items():
        for turn in summary.get("turns", []):
            out.write(f"  {mode:<20} {turn['category']:<18} {turn['median_tps']:7.1f} tok/s "
                      f"{turn['speedup_vs_standard'] or 0:5.2f}x standard {turn['tokens_per_pass']:5.2f} tok/pass\n")
    for category, summary in report["categories"].items():
        out.write(f"\n{category}\n" + format_table(summary) + "\n")
    if "follow_up" in report:
        f = report["follow_up"]
        out.write(
            f"\nfollow-up turn: first token after {f['second_turn_ttft_s']:.2f} s with the prompt cache "
            f"({f['second_turn_cached_tokens']} of {f['second_turn_prompt_tokens']} prompt tokens cached), "
            f"{f['second_turn_uncached_ttft_s']:.2f} s without; first turn {f['first_turn_ttft_s']:.2f} s\n"
        )
    out.write(f"measured on {', '.join(f'{k} {v}' for k, v in report['machine'].items())}\n")


def _conversation_report(args: argparse.Namespace, params: GenerationParams) -> dict[str, object]:
    """Run the chosen modes through the conversation file's chats, each mode from the same state."""
    from .conversation_benchmark import load_chats, run_conversation

    def replay(pair, chats, modes, iterations, on_run):
        return run_conversation(pair, chats, modes, params, iterations, system_prompt=args.system, on_run=on_run)

    return _per_turn_report(args, lambda: load_chats(args.conversation), replay)


def _agent_report(args: argparse.Namespace, params: GenerationParams) -> dict[str, object]:
    """Replay the agent's recorded requests with each chosen mode, each from the same state."""
    from .agent_benchmark import load_session, run_agent

    def replay(pair, turns, modes, iterations, on_run):
        return run_agent(pair, turns, modes, params, iterations, on_run=on_run)

    return {**_per_turn_report(args, lambda: load_session(args.agent), replay), "session": str(args.agent)}


def _per_turn_report(args: argparse.Namespace, load: Callable[[], Any], replay: Callable[..., list[Any]]) -> dict[str, object]:
    """Load a conversation or a session, run the chosen modes through it (`replay`), and summarize it turn by turn."""
    from ..decoding.pair import ModelPair
    from .benchmark import check_modes, machine_info
    from .conversation_benchmark import summarize_conversation

    try:
        source = load()
        modes = check_modes(args.modes.split(","), has_draft=bool(args.draft), conversation=True)
    except ValueError as e:
        raise SpecChatError(str(e)) from e
    pair = ModelPair.load(args.target, args.draft)

    def progress(run) -> None:
        if not args.json:
            print(f"  {run.category} iteration {run.iteration} {run.mode:<20} {run.tokens:4d} tokens "
                  f"{run.generation_tps:8.1f} tok/s {run.tokens_per_pass:5.2f} tok/pass", file=sys.stderr)

    runs = replay(pair, source, modes, args.iterations, progress)
    return {"machine": machine_info(), "runs": [r.as_dict() for r in runs], "summary": summarize_conversation(runs),
            "categories": {}}
