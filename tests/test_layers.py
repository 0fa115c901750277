"""The layering of docs/design.md ("Layers"), enforced by import-linter's contracts in pyproject.toml.

The engine knows nothing of Qt; the CLI stands above the server, the server above decoding, decoding above the model
library; the decoding core never imports downloads, the CLI or the server; events, params and errors import no
layer; the app never imports MLX. Each contract is also shown to bite: in a copy of the tree with forbidden imports
added, each import must break its contract. No engine or app module imports itself through others (a circle means a concept cut in the wrong place).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

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


# (module, the import added to it, the contract it breaks, the import as import-linter's report names it)
FORBIDDEN = [
    ("engine/decoding/sampling.py", "import PySide6", "The engine knows nothing of Qt or the app",
     "engine.decoding.sampling -> PySide6"),
    ("engine/models/memory.py", "from engine.decoding import pair", "The CLI above the server above decoding above the model library",
     "engine.models.memory -> engine.decoding.pair"),
    ("engine/decoding/acceptance.py", "from engine.models import downloads", "The decoding core never imports downloads, the CLI or the server",
     "engine.decoding.acceptance -> engine.models.downloads"),
    ("engine/events.py", "from engine.decoding import prompt_ids", "Events, params and errors are the base every layer stands on",
     "engine.events -> engine.decoding.prompt_ids"),
    ("engine/drafter_kinds.py", "import mlx.core", "Events, params and errors are the base every layer stands on",
     "engine.drafter_kinds -> mlx"),
    ("app/chat_view.py", "import mlx.core", "The app never touches MLX", "app.chat_view -> mlx"),
]


def broken_contracts(report: str) -> dict[str, str]:
    """Each broken contract's part of import-linter's report, by the contract's name (the line over its underline)."""
    parts = re.split(r"^(.+)\n-+$", report.partition("Broken contracts")[2], flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_each_forbidden_import_breaks_its_contract_and_no_other(tmp_path: Path) -> None:
    """A copy of the tree with the forbidden imports above all added: the report names each under its own contract,
    and under no other. One run for all six (a copy and a run for each took six times the time): the report lists
    every illegal import, so none hides behind another that breaks the same contract."""
    for package in ("engine", "app"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for module, forbidden_import, _, _ in FORBIDDEN:
        target = tmp_path / module
        target.write_text(target.read_text() + f"\n{forbidden_import}  # added by the test\n")
    done = lint(tmp_path)
    assert done.returncode != 0
    assert f"Contracts: 0 kept, {CONTRACTS} broken." in done.stdout
    broken = broken_contracts(done.stdout)
    assert set(broken) == {contract for _, _, contract, _ in FORBIDDEN}
    for _, _, contract, reported in FORBIDDEN:
        assert [name for name, part in broken.items() if f"{reported} (l." in part] == [contract], reported


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of modules that import each other round a circle (strongly connected components of more than one
    module), found with Tarjan's algorithm kept iterative; imports inside functions and under TYPE_CHECKING count."""
    modules = sorted(m for m in graph.modules if not graph.is_module_squashed(m))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            module, imported = work[-1]
            step = next((m for m in imported if m in graph.modules), None)
            if step is None:  # every import of `module` followed: close it
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    group = stack[stack.index(module):]
                    del stack[stack.index(module):]
                    if len(group) > 1:
                        cycles.append(sorted(group))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                work.append((step, iter(sorted(graph.find_modules_directly_imported_by(step)))))
            elif step in stack:
                low[module] = min(low[module], index[step])
    return cycles


def test_no_module_imports_itself_through_others() -> None:
    assert import_cycles(grimp.build_graph("engine", "app", cache_dir=None)) == []


def test_a_circle_of_imports_is_found() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d"), ("p.d", "p.e")]:
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"]]
