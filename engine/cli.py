"""`specchat-cli` (also `python -m engine`): the engine from a terminal.

Subcommands: generate, benchmark, list-models, import-gguf. Every expected failure prints one line,
"error: <what is wrong and what to do>", and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence, TextIO

from .errors import SpecChatError
from .params import DRAFTERS, MODES, GenerationParams

ORIGIN_COLOURS = {"accepted": "\033[32m", "corrected": "\033[33m", "bonus": "\033[36m"}
RESET = "\033[0m"


def _add_sampling_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", required=True, help="target model: folder, .gguf file or Hugging Face repo id")
    p.add_argument("--draft", help="draft model (same tokenizer as the target)")
    p.add_argument("--num-draft", type=int, default=4, help="draft length K (the maximum when adaptive)")
    p.add_argument("--no-adaptive", action="store_true", help="draft exactly K tokens every round")
    p.add_argument(
        "--drafter", choices=DRAFTERS, help="where drafts come from (default: model with --draft, else lookup)"
    )
    p.add_argument("--temp", type=float, default=0.0, help="temperature (0 = greedy)")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--min-p", type=float, default=0.0)
    p.add_argument("--repetition-penalty", type=float, default=1.0)
    p.add_argument("--seed", type=int)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--chat", action="store_true", help="apply the target's chat template")
    p.add_argument("--system", help="system prompt (with --chat)")


def _params(args: argparse.Namespace, **overrides: object) -> GenerationParams:
    drafter = args.drafter or ("model" if args.draft else "lookup")
    values: dict[str, object] = dict(
        drafter=drafter,
        num_draft=args.num_draft,
        adaptive=not args.no_adaptive,
        temperature=args.temp,
        top_p=args.top_p,
        top_k=args.top_k,
        min_p=args.min_p,
        repetition_penalty=args.repetition_penalty,
        seed=args.seed,
        max_tokens=args.max_tokens,
    )
    values.update(overrides)
    return GenerationParams(**values)  # type: ignore[arg-type]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specchat-cli", description="Speculative decoding on MLX.")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="generate a reply")
    _add_sampling_options(g)
    g.add_argument("--mode", choices=MODES, default="speculative")
    g.add_argument("--prompt", required=True)
    g.add_argument("--stop", action="append", default=[], help="a stop string (repeatable)")
    g.add_argument("--stats", action="store_true", help="print the statistics line after the text")
    g.add_argument("--json", action="store_true", help="print one JSON object instead of streaming text")
    g.add_argument("--color", action="store_true", help="colour accepted/corrected/bonus tokens")

    b = sub.add_parser("benchmark", help="compare decoding modes on the same prompts")
    _add_sampling_options(b)
    b.add_argument("--modes", default="standard,speculative", help="comma-separated, from: see --help-modes")
    b.add_argument("--prompt", action="append", default=[], help="a prompt (repeatable)")
    b.add_argument("--prompt-file", type=Path, help="prompts, one per line (or a JSON list)")
    b.add_argument("--iterations", type=int, default=1)
    b.add_argument("--json", action="store_true")

    sub.add_parser("list-models", help="the recommended draft/target pairs")

    i = sub.add_parser("import-gguf", help="convert a GGUF file into an MLX model folder")
    i.add_argument("file", type=Path)
    i.add_argument("out", type=Path)
    return parser


def _load_pair(args: argparse.Namespace):  # noqa: ANN202
    from .pair import ModelPair

    return ModelPair.load(args.target, args.draft)


def cmd_generate(args: argparse.Namespace, out: TextIO) -> int:
    from .events import GenerationResult, TokenEvent
    from .generation import generate_stream

    params = _params(args, mode=args.mode, stop=tuple(args.stop))
    pair = _load_pair(args)
    result = None
    for event in generate_stream(pair, args.prompt, params, chat=args.chat, system_prompt=args.system):
        if isinstance(event, TokenEvent) and not args.json:
            colour = ORIGIN_COLOURS.get(event.origin, "") if args.color else ""
            out.write(f"{colour}{event.text}{RESET if colour else ''}")
            out.flush()
        elif isinstance(event, GenerationResult):
            result = event
    assert result is not None
    if args.json:
        data = result.as_dict()
        data["stats"] = {k: v for k, v in data["stats"].items()}
        out.write(json.dumps(data, ensure_ascii=False) + "\n")
    else:
        out.write("\n")
        if args.stats:
            out.write(result.summary() + "\n")
    return 0


def _benchmark_prompts(args: argparse.Namespace) -> list[str]:
    prompts = list(args.prompt)
    if args.prompt_file:
        try:
            text = args.prompt_file.read_text(encoding="utf-8")
        except OSError as e:
            raise SpecChatError(f"Cannot read the prompt file {args.prompt_file}: {e.strerror}.") from e
        if text.lstrip().startswith("["):
            prompts += [p["prompt"] if isinstance(p, dict) else str(p) for p in json.loads(text)]
        else:
            prompts += [line for line in text.splitlines() if line.strip()]
    if not prompts:
        prompts = ["Explain speculative decoding in two sentences."]
    return prompts


def cmd_benchmark(args: argparse.Namespace, out: TextIO) -> int:
    from .benchmark import check_modes, format_table, run_benchmark, summarize

    params = _params(args)
    if args.iterations < 1:
        raise SpecChatError(f"--iterations must be at least 1, not {args.iterations}.")
    try:
        modes = check_modes(args.modes.split(","), has_draft=bool(args.draft))
    except ValueError as e:
        raise SpecChatError(str(e)) from e
    prompts = _benchmark_prompts(args)
    pair = _load_pair(args)
    prompt_ids = [pair.prompt_ids(p, chat=args.chat, system_prompt=args.system) for p in prompts]

    def progress(run) -> None:  # noqa: ANN001
        if not args.json:
            print(
                f"  prompt {run.prompt_index} iteration {run.iteration} {run.mode:<20} "
                f"{run.tokens:4d} tokens {run.generation_tps:8.1f} tok/s",
                file=sys.stderr,
            )

    runs = run_benchmark(pair, prompt_ids, modes, params, args.iterations, on_run=progress)
    summary = summarize(runs)
    if args.json:
        out.write(json.dumps({"runs": [r.as_dict() for r in runs], "summary": summary}) + "\n")
    else:
        out.write(format_table(summary) + "\n")
    return 0


def cmd_list_models(args: argparse.Namespace, out: TextIO) -> int:
    from .catalog import default_pair, recommended_pairs

    default = default_pair().id
    for pair in recommended_pairs():
        mark = "*" if pair.id == default else " "
        out.write(
            f"{mark} {pair.id:<22} {pair.label:<60} {pair.download_gb:6.2f} GB  "
            f"needs {pair.memory_gb:4.1f} GB  K={pair.num_draft}  {pair.use_case}\n"
        )
    return 0


def cmd_import_gguf(args: argparse.Namespace, out: TextIO) -> int:
    from .gguf_import import import_gguf

    if not args.file.is_file():
        raise SpecChatError(f"No GGUF file at {args.file}: check the path.")
    folder = import_gguf(args.file, args.out)
    out.write(f"Imported {args.file.name} into {folder}\n")
    return 0


COMMANDS = {
    "generate": cmd_generate,
    "benchmark": cmd_benchmark,
    "list-models": cmd_list_models,
    "import-gguf": cmd_import_gguf,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 a reported error, 2 bad usage)."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args, out or sys.stdout)
    except SpecChatError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


def entry_point() -> None:
    sys.exit(main())
