"""`specchat-cli` (also `python -m engine`): the engine from a terminal.

Subcommands: generate, benchmark, serve, list-models, download, models, delete, check-pair, import-gguf. Every
expected failure prints one line, "error: <what is wrong and what to do>", and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..decoding.prompt_cache import BUDGET_HELP, DEFAULT_BUDGET_MB, MB, megabytes
from ..decoding.prompt_cache_disk import DEFAULT_DISK_MB, DISK_HELP, DiskCache
from ..decoding.prompt_cache_disk import folder as disk_folder
from ..drafter_kinds import names
from ..errors import SpecChatError
from ..params import MODES, PRESETS, GenerationParams
from .attach_option import add_attach_option, attached
from .benchmark import ALL_MODES
from .benchmark_command import benchmark_command
from .model_commands import cmd_check_pair, cmd_delete, cmd_download, cmd_import_gguf, cmd_list_models, cmd_models

if TYPE_CHECKING:  # the server is imported only by `serve`
    from ..serving.generation_queue import EngineThread

ORIGIN_COLOURS = {"accepted": "\033[32m", "corrected": "\033[33m", "bonus": "\033[36m"}
RESET = "\033[0m"
THINK_TAGS = {"reasoning": "<think>\n", "answer": "\n</think>\n\n"}  # written when the output enters each part


# CLI option -> GenerationParams field. Options left out take the chosen preset's value, so the defaults have
# one source: the dataclass (the "default" preset) and the presets derived from it.
SAMPLING_OPTIONS = {
    "num_draft": "num_draft",
    "max_draft": "max_draft",
    "temp": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "repetition_penalty": "repetition_penalty",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "seed": "seed",
    "max_tokens": "max_tokens",
    "kv_bits": "kv_bits",
    "lenience": "lenience",
    "fanout": "fanout",
}
# --mode: the engine's modes, and "ssd": speculative with the draft model drafting ahead during each verify.
CLI_MODES = MODES + ("ssd",)


def _add_sampling_options(p: argparse.ArgumentParser, preset: str) -> None:
    p.add_argument("--target", required=True, help="target model: folder, .gguf file or Hugging Face repo id")
    p.add_argument("--draft", help="draft model (same tokenizer as the target), or an EAGLE-3, DFlash or DSpark drafter's folder")
    p.add_argument(
        "--preset", choices=PRESETS, default=preset, help=f"starting point for every option not given (default: {preset})"
    )
    p.add_argument("--num-draft", type=int, help="draft length K (adaptive: of the first round; DFlash: tokens of its block verified)")
    p.add_argument("--no-adaptive", action="store_true", help="draft exactly K tokens every round")
    p.add_argument("--max-draft", type=int, help="adaptive: the most a round may draft")
    p.add_argument(
        "--drafter", choices=names(),
        help="where drafts come from (default: auto, each round the fastest of lookup, the --draft model or drafter "
             "folder and the target's MTP heads, as measured here, or none)"
    )
    p.add_argument("--temp", type=float, help="temperature (0 = greedy)")
    p.add_argument("--top-p", type=float)
    p.add_argument("--top-k", type=int)
    p.add_argument("--min-p", type=float)
    p.add_argument("--repetition-penalty", type=float)
    p.add_argument("--presence-penalty", type=float, help="OpenAI's: -2 to 2, less for a token among the last 20")
    p.add_argument("--frequency-penalty", type=float, help="OpenAI's: -2 to 2, less for each time a token is among the last 20")
    p.add_argument("--seed", type=int)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--kv-bits", type=int, choices=(8, 4), help="store keys and values in 8 or 4 bits (long chats)")
    p.add_argument("--fanout", type=int, help="--mode ssd: outcomes pre-drafted per likely accepted length (default 3)")
    p.add_argument("--lenience", type=float, help="δ in [0, 1]: accept more draft tokens; LOSSY above 0 (default 0: exact)")
    p.add_argument("--no-history", action="store_true",
                   help="lookup drafts from the context only, not from the app's saved chats and earlier answers")
    p.add_argument("--no-think", action="store_true",
                   help="a thinking model answers at once (its template's no-think prompt; with --chat)")
    p.add_argument("--chat", action="store_true", help="apply the target's chat template")
    p.add_argument("--system", help="system prompt (with --chat)")


def _add_hosts_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hosts", type=Path, help="run the target across the Macs of this mlx.launch hostfile (docs/across-macs.md)")
    p.add_argument("--ring-port", type=int, default=32323, help="--hosts: the ring's first port (one per Mac)")


def _params(args: argparse.Namespace, **overrides: object) -> GenerationParams:
    """The preset, with every option the user gave on top."""
    values: dict[str, object] = {field: getattr(args, option) for option, field in SAMPLING_OPTIONS.items()}
    values = {k: v for k, v in values.items() if v is not None}
    if args.drafter:
        values["drafter"] = args.drafter
    if args.no_adaptive:
        values["adaptive"] = False
    if args.no_history:
        values["history"] = False
    if args.no_think:
        values["think"] = False
    values.update(overrides)
    if values.get("mode") == "ssd":
        values.update(mode="speculative", ssd=True, drafter=args.drafter or "model")  # SSD pre-drafts with a draft model
    return GenerationParams.preset(args.preset, **values)


def _add_serve_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="serve the pair on an OpenAI-compatible HTTP endpoint (docs/server.md)")
    _add_sampling_options(s, preset="default")
    s.add_argument("--mode", choices=CLI_MODES, default="speculative", help="the default; a request may set its own")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (beyond loopback needs --api-key)")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--api-key", help="require 'Authorization: Bearer KEY' on every request")
    s.add_argument("--max-waiting", type=int, default=8, help="requests that may wait behind the running one (more: 503)")
    s.add_argument("--prompt-cache-mb", type=megabytes, default=DEFAULT_BUDGET_MB, metavar="MB", help=BUDGET_HELP)
    s.add_argument("--prompt-cache-disk-mb", type=megabytes, default=DEFAULT_DISK_MB, metavar="MB", help=DISK_HELP)
    _add_hosts_option(s)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specchat-cli", description="Speculative decoding on MLX.")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="generate a reply")
    _add_sampling_options(g, preset="default")
    g.add_argument("--mode", choices=CLI_MODES, default="speculative", help="ssd: draft the next round during each verify")
    source = g.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", help="the prompt; - reads it from standard input")
    source.add_argument("--prompt-file", type=Path, help="read the prompt from a file")
    add_attach_option(g)
    g.add_argument("--image", type=Path, action="append", default=[], metavar="FILE",
                   help="an image the prompt asks about, for a vision target: PNG, JPEG or WebP (repeatable)")
    g.add_argument("--stop", action="append", default=[], help="a stop string (repeatable)")
    g.add_argument("--stats", action="store_true", help="print the statistics line after the text")
    g.add_argument("--json", action="store_true", help="print one JSON object instead of streaming text")
    g.add_argument("--color", action="store_true", help="colour accepted/corrected/bonus tokens")
    g.add_argument("--trace", type=Path, help="write every round to this file, one JSON object per line (docs/cli.md)")
    _add_hosts_option(g)

    # Greedy by default: the benchmark checks every mode's output against standard decoding's, token for token.
    b = sub.add_parser("benchmark", help="compare decoding modes on the same prompts")
    _add_sampling_options(b, preset="greedy")
    b.add_argument("--modes", default="standard,speculative", help="comma-separated: " + ", ".join(ALL_MODES))
    b.add_argument("--prompt", action="append", default=[], help="a prompt (repeatable)")
    b.add_argument(
        "--prompt-file", type=Path, help="prompts, one per line, or a JSON list of strings or {prompt, category}"
    )
    add_attach_option(b)
    b.add_argument("--iterations", type=int, default=1)
    b.add_argument("--scripted", type=Path, action="append", default=[], help="a scripted drafter's JSON (docs/cli.md; repeatable)")
    b.add_argument("--follow-up", action="store_true", help="also time a chat's second turn (prompt caching)")
    b.add_argument(
        "--conversation", type=Path,
        help="a JSON list of user messages run as one chat (or a list of such lists: chats in order), timed per turn",
    )
    b.add_argument("--agent", type=Path, help="an agent's recorded session (chat requests with tools), replayed per turn")
    b.add_argument("--plot", type=Path, help="write the speedups as an SVG bar chart")
    b.add_argument("--json", action="store_true")

    _add_serve_parser(sub)

    sub.add_parser("list-models", help="the recommended draft/target pairs, with download state and fit")

    d = sub.add_parser("download", help="download a model from the Hugging Face hub into the HF cache")
    d.add_argument("repo_id")

    sub.add_parser("models", help="models on this machine: the HF cache, opened models, LM Studio's folder")

    rm = sub.add_parser("delete", help="delete a model from the HF cache")
    rm.add_argument("repo_id")

    c = sub.add_parser("check-pair", help="can this draft draft for this target?")
    c.add_argument("--target", required=True)
    c.add_argument("--draft", required=True)

    i = sub.add_parser("import-gguf", help="convert a GGUF file into an MLX model folder")
    i.add_argument("file", type=Path)
    i.add_argument("out", type=Path)
    return parser


def _load_pair(args: argparse.Namespace, params: GenerationParams | None = None, wait: bool = True):
    """The pair, with the app's saved chats indexed for lookup when `params` draft from the history (as the window
    does after a load); `wait` for the index (one answer: drafting the same way every run) or build it behind."""
    from ..decoding.pair import ModelPair

    return _with_history(ModelPair.load(args.target, args.draft), params, wait)


def _with_history(pair, params: GenerationParams | None, wait: bool = True):
    """`pair`, its history indexing the saved chats when `params` draft from them (see _load_pair)."""
    if params is not None and params.drafts_from_history:
        from ..conversations import saved_chats
        from ..decoding.drafting.history_lookup import start_indexing

        indexing = start_indexing(pair.history, pair.target.path, saved_chats, pair.idle)
        if wait:
            indexing.join()
    return pair


def _prompt_text(args: argparse.Namespace) -> str:
    """The prompt: --prompt TEXT, --prompt - (standard input) or --prompt-file FILE."""
    if args.prompt_file is not None:
        try:
            return args.prompt_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            reason = getattr(e, "strerror", None) or "it is not UTF-8 text"
            raise SpecChatError(f"Cannot read the prompt file {args.prompt_file}: {reason}. Check the path.") from e
    return sys.stdin.read() if args.prompt == "-" else args.prompt


def _open_trace(path: Path | None) -> TextIO | None:
    if path is None:
        return None
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as e:
        raise SpecChatError(f"Cannot write the trace to {path}: {e.strerror}. Pick a writable path.") from e


def cmd_generate(args: argparse.Namespace, out: TextIO) -> int:
    params = _params(args, mode=args.mode, stop=tuple(args.stop))
    if params.lossy:
        print(f"note: lenience {params.lenience:g} is LOSSY: the output no longer follows the target's distribution "
              "exactly.", file=sys.stderr)
    if args.hosts:
        from .distributed_command import across_macs

        return across_macs(args, lambda session: _generate_with(_with_history(session.pair, params), args, params, out))
    return _generate_with(_load_pair(args, params), args, params, out)


def _generate_with(pair, args: argparse.Namespace, params: GenerationParams, out: TextIO) -> int:
    """One answer from a loaded pair, streamed or as JSON (see `generate --help`)."""
    from ..decoding.generation import generate_stream
    from ..events import GenerationResult, RoundEvent, TokenEvent, trace_line

    prompt = attached(pair, args, _prompt_text(args), params)
    trace = _open_trace(args.trace)
    result, part = None, "answer"
    chat = args.chat or bool(args.image)  # the chat template places the images
    for event in generate_stream(pair, prompt, params, chat=chat, system_prompt=args.system, images=args.image):
        if isinstance(event, TokenEvent) and not args.json:
            if event.part != "marker" and event.part != part and event.text:
                out.write(THINK_TAGS[event.part])  # a thinking model's reasoning, set off as the model wrote it
                part = event.part
            colour = ORIGIN_COLOURS.get(event.origin, "") if args.color else ""
            out.write(f"{colour}{event.text}{RESET if colour else ''}")
            out.flush()
        elif isinstance(event, RoundEvent) and trace:
            trace.write(trace_line(event.trace_record()))
        elif isinstance(event, GenerationResult):
            result = event
    if trace:
        trace.close()
    assert result is not None
    if args.json:
        out.write(json.dumps(result.as_dict(), ensure_ascii=False) + "\n")
    else:
        out.write("\n")
        if args.stats:
            out.write(result.summary() + "\n")
    return 0


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    from ..serving.listener import check_host

    params = _params(args, mode=args.mode)
    check_host(args.host, args.api_key)
    if args.hosts:
        from .distributed_command import across_macs, stop_when_broken

        return across_macs(args, lambda session: _serve(args, params, out, lambda: _with_history(session.pair, params, False),
                                                        stop_when_broken(session)))
    return _serve(args, params, out, lambda: _load_pair(args, params, wait=False))


def _serve(args: argparse.Namespace, params: GenerationParams, out: TextIO, load, watch=None) -> int:
    """Serve the pair `load` gives until Ctrl-C (or `watch`, given the server, stops it); the engine ends first."""
    from ..serving.generation_queue import EngineThread
    from ..serving.listener import RunningServer, bind
    from ..serving.server import create_app

    sock = bind(args.host, args.port)
    engine = EngineThread(load, args.target)
    try:
        engine.start()  # loads the pair on the thread that will generate with it (a load error is raised here)
        engine.pair.prompt_cache.budget_bytes = args.prompt_cache_mb * MB  # before any request reaches it
        if args.prompt_cache_disk_mb:
            engine.pair.prompt_cache.disk = DiskCache(disk_folder(), args.prompt_cache_disk_mb * MB)
        app = create_app(engine, params, api_key=args.api_key, max_waiting=args.max_waiting,
                         log=lambda record: print(record.line(), file=sys.stderr, flush=True))
        server = RunningServer(app, sock)
        if watch is not None:
            watch(server)
        out.write(f"Serving {engine.model_ids()[0]} on http://{args.host}:{server.port}/v1 (Ctrl-C stops)\n")
        out.flush()
        server.run()
    finally:
        sock.close()
        _stop_engine(engine)  # the running answer ends first
    return 0


def _stop_engine(engine: EngineThread) -> None:
    """Let the engine end its work (`EngineThread.stop`); where it cannot, quit the process here and now.

    It cannot when Ctrl-C came while the pair loaded, when a second Ctrl-C cut the prompt cache's writing short, or
    when a running answer would not end. Its thread is then inside MLX, and tearing the interpreter down around it
    would end that thread the moment it next takes the GIL, unwinding MLX's C++ frames mid-work: libstdc++ aborts
    the process ("terminate called without an active exception", status 134). `os._exit` ends every thread at once
    instead, skipping the teardown; nothing that finishing would keep is lost, since a load has nothing to save and
    a second Ctrl-C asked to quit without the files."""
    interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)  # the first Ctrl-C, on its way to main()
    try:
        engine.stop(log=lambda line: print(line, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        if engine.ended:
            raise
        interrupted = True  # the second Ctrl-C, while the prompt cache's files were written
    if engine.ended:
        return
    print("\ninterrupted" if interrupted else "error: the running answer did not end; the server quit without it",
          file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130 if interrupted else 1)


COMMANDS = {
    "generate": cmd_generate,
    "benchmark": lambda args, out: benchmark_command(args, _params(args), out),
    "serve": cmd_serve,
    "list-models": cmd_list_models,
    "download": cmd_download,
    "models": cmd_models,
    "delete": cmd_delete,
    "check-pair": cmd_check_pair,
    "import-gguf": cmd_import_gguf,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 a reported error, 2 bad usage)."""
    args = build_parser().parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]  # what --hosts runs again on every Mac
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
