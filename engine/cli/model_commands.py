"""`specchat-cli`'s commands about models on disk: the recommended pairs, downloading, listing and deleting models,
checking a pair's tokenizers and importing a GGUF file. Each takes the parsed arguments and the output stream and
returns the exit status, as `cli.COMMANDS` calls it."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ..errors import SpecChatError


def cmd_list_models(args: argparse.Namespace, out: TextIO) -> int:
    from ..models.catalog import default_pair, pair_statuses

    default = default_pair().id
    statuses = pair_statuses()
    for status in statuses:
        pair = status.pair
        mark = "*" if pair.id == default else " "
        state = "downloaded" if status.downloaded else f"{status.to_download_gb:5.2f} GB to download"
        fit = "fits" if status.fit.fits else "TOO BIG"
        out.write(
            f"{mark} {pair.id:<22} {pair.label:<62} {state:<22} needs {pair.memory_gb:4.1f} GB ({fit})  "
            f"K={pair.num_draft}  {pair.use_case}\n"
        )
    available = statuses[0].fit.available_gb if statuses else 0.0
    out.write(f"* default pair; this machine gives models about {available:.1f} GB\n")
    return 0


def cmd_download(args: argparse.Namespace, out: TextIO) -> int:
    from ..models.downloads import DownloadProgress, download_model

    width = 30

    def bar(p: DownloadProgress) -> None:
        filled = int(width * p.fraction)
        print(f"\r[{'#' * filled}{'.' * (width - filled)}] {p.fraction:6.1%}  {p.describe():<45}", end="", file=sys.stderr, flush=True)

    path = download_model(args.repo_id, progress=bar)
    print(file=sys.stderr)
    out.write(f"{args.repo_id} is in {path}\n")
    return 0


def cmd_models(args: argparse.Namespace, out: TextIO) -> int:
    from ..models.model_store import cached_models, lm_studio_models, remembered_models

    sections = [
        ("Hugging Face cache", cached_models()),
        ("Opened in SpecChat", remembered_models()),
        ("LM Studio", lm_studio_models()),
    ]
    for title, models in sections:
        out.write(f"{title}:\n")
        if not models:
            out.write("  (none)\n")
        for model in models:
            note = f"  ({model.unusable_because})" if model.unusable_because else ""
            out.write(f"  {model.size_gb:7.2f} GB  {model.name}{note}\n")
    return 0


def cmd_delete(args: argparse.Namespace, out: TextIO) -> int:
    from ..models.model_store import delete_cached_model

    freed = delete_cached_model(args.repo_id)
    out.write(f"Deleted {args.repo_id}, freeing {freed / 1e9:.2f} GB\n")
    return 0


def cmd_check_pair(args: argparse.Namespace, out: TextIO) -> int:
    from ..models.compatibility import check_pair

    check = check_pair(args.target, args.draft)
    out.write(("compatible: " if check.compatible else "incompatible: ") + check.explain(args.target, args.draft) + "\n")
    for warning in check.warnings:
        out.write(f"warning: {warning}\n")
    return 0 if check.compatible else 1


def cmd_import_gguf(args: argparse.Namespace, out: TextIO) -> int:
    from ..models.gguf_import import import_gguf

    if not args.file.is_file():
        raise SpecChatError(f"No GGUF file at {args.file}: check the path.")
    folder = import_gguf(args.file, args.out)
    out.write(f"Imported {args.file.name} into {folder}\n")
    return 0
