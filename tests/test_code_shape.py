"""The code stays readable in pieces: no module over 400 lines, no function over 60, outside the tests."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for package in ("engine", "app", "packaging") for p in sorted((ROOT / package).rglob("*.py"))]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def test_no_module_is_longer_than_400_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in SOURCES if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, long


def test_no_function_is_longer_than_60_lines() -> None:
    long = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert not long, long
