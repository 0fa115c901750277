"""Every reference in the repository points into the repository, and every documentation link resolves.

The code once cited a design document that lived beside the checkout, not in it: whoever cloned the project could
not read what eighteen references sent them to. These tests read every .py, .md, .toml, Makefile and CI file for
paths that leave the repository (absolute paths into the machine it was written on, the folder of notes shared
between its developers, a `..` that climbs above the root, a design document named anywhere but docs/design.md),
and every README.md and docs/*.md for relative links, repository paths in backticks and #anchors that lead nowhere.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = {".git", ".venv", "build", "dist", "__pycache__", "benchmark-results", ".pytest_cache"}
BUILT = {("packaging", "build"), ("packaging", "dist")}
# This file spells out the very patterns it looks for.
THIS_FILE = Path(__file__).resolve()

OUTSIDE_PATTERNS = {
    "an absolute path on the machine it was written on": re.compile(r"/work/"),
    "the developers' shared notes folder": re.compile(r"(?<![\w-])shared/"),
}
PARENT_PATH = re.compile(r"(?:\.\./)+[\w./-]*")
DESIGN_NAME = re.compile(r"(?<![\w.])((?:[\w.-]+/)*design\.md)", re.IGNORECASE)
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REPO_PATH = re.compile(r"`((?:engine|app|tests|resources|packaging|docs|\.ci)/[\w./-]*[\w/])`")
EXTERNAL = ("http://", "https://", "mailto:")


def repository_files() -> list[Path]:
    """The files a reference could hide in: source, docs, project settings, the Makefile and the CI scripts.

    Walked with pruning rather than globbed: `make` puts a whole virtualenv in .venv.
    """
    found = []
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")
                   and here.relative_to(ROOT).parts + (d,) not in BUILT]
        for name in files:
            path = here / name
            if path != THIS_FILE and (path.suffix in {".py", ".md", ".toml"} or name == "Makefile"
                                      or path.relative_to(ROOT).parts[0] == ".ci"):
                found.append(path)
    return sorted(found)


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def outside_references(path: Path, root: Path = ROOT) -> list[str]:
    """Each reference in `path` to something outside the repository at `root`, as 'line N: what (why)'."""
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        for why, pattern in OUTSIDE_PATTERNS.items():
            problems += [f"line {number}: {m.group(0)!r} ({why})" for m in pattern.finditer(line)]
        for match in PARENT_PATH.finditer(line):
            target = (path.parent / match.group(0)).resolve()
            if not target.is_relative_to(root):
                problems.append(f"line {number}: {match.group(0)!r} (climbs out of the repository)")
        for match in DESIGN_NAME.finditer(line):
            target = (path.parent / match.group(1)).resolve()
            if match.group(1) != "docs/design.md" and target != root / "docs" / "design.md":
                problems.append(f"line {number}: {match.group(1)!r} (the design document is docs/design.md)")
    return problems


def test_the_scan_covers_code_docs_and_ci() -> None:
    """The scan below must not pass by reading nothing."""
    names = {p.relative_to(ROOT).as_posix() for p in repository_files()}
    assert {"README.md", "Makefile", "pyproject.toml", ".ci/run", "engine/decoding/speculative.py"} <= names


@pytest.mark.parametrize("path", repository_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_reference_leaves_the_repository(path: Path) -> None:
    """A clone holds everything a comment or doc sends its reader to."""
    assert outside_references(path) == []


def test_a_reference_outside_is_caught(tmp_path: Path) -> None:
    """The patterns above find what they are for (the scan passing proves nothing if they match nothing)."""
    source = tmp_path / "engine" / "module.py"
    source.parent.mkdir()
    source.write_text('"""See DESIGN.md, /work/notes/x.md and our shared/notes."""\n# ../../elsewhere.md\n'
                      "# docs/design.md and ../app/view.py are fine\n")
    found = [problem.split(" (")[0] for problem in outside_references(source, root=tmp_path)]
    assert found == ["line 1: '/work/'", "line 1: 'shared/'", "line 1: 'DESIGN.md'", "line 2: '../../elsewhere.md'"]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub renders it: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", text, flags=re.MULTILINE)}


def broken_links(path: Path) -> list[str]:
    """Relative links, anchors and backticked repository paths in `path` that lead nowhere."""
    text = path.read_text(encoding="utf-8")
    problems = []
    for target in MARKDOWN_LINK.findall(text):
        if target.startswith(EXTERNAL):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            problems.append(f"link {target!r}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"link {target!r}: no heading with that anchor")
    for repo_path in REPO_PATH.findall(text):
        if not (ROOT / repo_path).exists():
            problems.append(f"`{repo_path}`: no such file or folder in the repository")
    return problems


def test_the_documents_exist() -> None:
    names = {p.name for p in documents()}
    assert {"README.md", "design.md", "cli.md", "server.md", "across-macs.md", "gguf.md", "drafters.md",
            "speed.md", "development.md"} <= names


@pytest.mark.parametrize("path", documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_resolves(path: Path) -> None:
    """A moved section or a renamed module must not leave a link to nothing behind."""
    assert broken_links(path) == []


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A heading\n")
    page.write_text("[ok](there.md#a-heading) [gone](missing.md) [bad](there.md#nothing) [web](https://x.org/y)\n"
                    "`engine/no_such_module.py` `engine/decoding/policy/draft_length.py`\n")
    assert [p.split(":")[0] for p in broken_links(page)] == ["link 'missing.md'", "link 'there.md#nothing'",
                                                             "`engine/no_such_module.py`"]
