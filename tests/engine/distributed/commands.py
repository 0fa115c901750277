"""The command every rank of a pipeline test runs: `python -m engine ...` (started with MLX_RANK set, so `--hosts`
only marks the mode), and the options that make its answer greedy and drafted from the context alone."""

from __future__ import annotations

import sys
from pathlib import Path

GREEDY = ("--preset", "greedy", "--no-history")
ROOT = Path(__file__).resolve().parents[3]


def cli_rank(*args: str) -> list[str]:
    return [sys.executable, "-m", "engine", *args]
