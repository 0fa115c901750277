"""The layering of DESIGN.md, enforced by import-linter's contracts in pyproject.toml.

The engine knows nothing of Qt; tools stand above decoding, decoding above the model library; the decoding core
never imports downloads or the CLI; events, params and errors import no layer; the app never imports MLX. Each
contract is also shown to bite: a copy of the tree with one forbidden import added must break it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = 5


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """Run import-linter on the packages under `root` (first on the path, ahead of the installed ones)."""
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [command, "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root, capture_output=True, text=True, env=env
    )


def test_every_layer_contract_is_kept() -> None:
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {CONTRACTS} kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    "module, forbidden_import, contract",
    [
        ("engine/decoding/sampling.py", "import PySide6", "The engine knows nothing of Qt or the app"),
        ("engine/models/memory.py", "from engine.decoding import pair", "Tools above decoding above the model library"),
        ("engine/decoding/acceptance.py", "from engine.models import downloads", "The decoding core never imports downloads or the CLI"),
        ("engine/events.py", "from engine.decoding import chat", "Events, params and errors are the base every layer stands on"),
        ("engine/drafter_kinds.py", "import mlx.core", "Events, params and errors are the base every layer stands on"),
        ("app/chat_view.py", "import mlx.core", "The app never touches MLX"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(tmp_path: Path, module: str, forbidden_import: str, contract: str) -> None:
    for package in ("engine", "app"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{forbidden_import}  # added by the test\n")
    done = lint(tmp_path)
    assert done.returncode != 0
    assert f"{contract} BROKEN" in done.stdout
    assert f"Contracts: {CONTRACTS - 1} kept, 1 broken." in done.stdout
