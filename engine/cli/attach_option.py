"""`--attach FILE` (repeatable) of `specchat-cli generate` and `benchmark`: files before the prompt, as in the app.

The files go through the app's path (`engine.attachments`): read to text, counted in the target's tokens, refused
when they do not fit the model's context (or, with `--truncate-attachments`, cut to fit), and put into the user
message fenced under their names. So a benchmark of editing an attached file measures what the app does.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..attachments import Attachment, AttachmentTooLarge, check_fits, read_attachment, token_counter, truncated, with_attachments
from ..params import GenerationParams

if TYPE_CHECKING:  # the CLI imports MLX only for the commands that run a model
    from ..decoding.pair import ModelPair


def add_attach_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--attach", type=Path, action="append", default=[], metavar="FILE",
                        help="a file put before the prompt, as the app attaches it: text, code, Markdown, CSV, JSON or "
                             "PDF (repeatable)")
    parser.add_argument("--truncate-attachments", action="store_true",
                        help="cut an attached file too big for the model's context to fit, instead of refusing it")


def attached(pair: ModelPair, args: argparse.Namespace, prompt: str, params: GenerationParams) -> str:
    """The prompt with the `--attach` files before it (the prompt itself when none are given)."""
    return with_attachments(prompt, read_attachments(pair, args.attach, params, args.truncate_attachments))


def read_attachments(pair: ModelPair, paths: list[Path], params: GenerationParams, truncate: bool) -> list[Attachment]:
    """The files, each checked to fit beside those before it in the context the generation reads."""
    count = token_counter(pair.tokenizer)
    context, model = pair.context_limit(params.uses_draft_model and params.mode == "speculative")
    files: list[Attachment] = []
    for path in paths:
        attachment = read_attachment(path, count)
        try:
            check_fits(attachment, files, context, params.max_tokens, model.display_name)
        except AttachmentTooLarge as too_big:
            if not truncate:
                raise AttachmentTooLarge(f"{too_big} Pass --truncate-attachments to send it cut to fit, or attach a "
                                         "smaller part of it.", attachment, too_big.room) from None
            attachment = truncated(attachment, too_big.room, count)
        files.append(attachment)
    return files
