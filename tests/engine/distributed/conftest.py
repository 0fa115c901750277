"""Tiny four-layer models for the pipeline tests, and the command that runs one rank of `specchat-cli`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.fixtures.tiny_families import build_family


@pytest.fixture(scope="session")
def dense_models(tmp_path_factory: pytest.TempPathFactory):
    """`dense_models(family)`: (target folder, draft folder) of a tiny four-layer model and its two-layer draft."""
    root = tmp_path_factory.mktemp("dense")
    return lambda family: build_family(root, family)


def cli_rank(*args: str) -> list[str]:
    """`python -m engine ARGS` as every rank runs it (started with MLX_RANK set, `--hosts` only marks the mode)."""
    return [sys.executable, "-m", "engine", *args]


GREEDY = ("--preset", "greedy", "--no-history")
ROOT = Path(__file__).resolve().parents[3]
