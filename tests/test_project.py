"""pyproject.toml stays true to the code: its console scripts name functions that exist."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

PYPROJECT = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())


@pytest.mark.parametrize("name", sorted(PYPROJECT["project"]["scripts"]))
def test_each_console_script_names_a_function_that_exists(name: str) -> None:
    """specchat-cli named engine.cli for a while after the CLI moved to engine/tools/: the command failed."""
    module, function = PYPROJECT["project"]["scripts"][name].split(":")
    assert callable(getattr(importlib.import_module(module), function))
