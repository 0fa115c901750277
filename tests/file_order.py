"""The order test files are handed to xdist's workers in: the bundle build first, then the longest files first.

Under the Makefile's `--dist loadfile --no-loadscope-reorder`, xdist hands whole files to whichever worker is free,
in collection order. Files in plain path order leave whichever long file comes last running alone at the end while
the other worker waits (6 s of `make test-fast`'s 3 minutes with tests/engine/serving/test_tool_grammar.py last).
Longest first, the short files at the end fill both workers until they finish together.

How long each file takes is measured, not guessed: `tests/file_durations.json` holds the seconds each file's tests
took (setup, call and teardown) in a run made with `--record-file-durations`, which rewrites the files it ran and
keeps the others'. A file not yet in it (a new one) counts as one second: most files are short. Stale numbers only
cost balance, never a test.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import pytest

FILE_DURATIONS = Path(__file__).with_name("file_durations.json")
UNKNOWN_FILE_S = 1.0


def file_of(nodeid: str) -> str:
    """`tests/app/test_x.py::test_y[a]` -> `tests/app/test_x.py`."""
    return nodeid.split("::", 1)[0]


def longest_files_first(items: list[pytest.Item], seconds: Mapping[str, float]) -> None:
    """Sort in place: packaging tests first (minutes on PyInstaller in a child process, best overlapped with the other
    worker's tests from the start), then files by their recorded seconds, longest first. The sort is stable, so a
    file's tests keep their order and stay together."""
    def key(item: pytest.Item) -> tuple[bool, float]:
        return item.get_closest_marker("packaging") is None, -seconds.get(file_of(item.nodeid), UNKNOWN_FILE_S)

    items.sort(key=key)


def recorded_seconds(path: Path = FILE_DURATIONS) -> dict[str, float]:
    return json.loads(path.read_text()) if path.exists() else {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-file-durations", action="store_true",
                     help=f"write each test file's seconds into {FILE_DURATIONS.name}, for the order files run in")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    longest_files_first(items, recorded_seconds())


class DurationRecorder:
    """Sums each file's test phases as the reports arrive (on xdist's controller, from every worker)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[file_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self) -> None:
        merged = {**recorded_seconds(self.path), **{name: round(s, 2) for name, s in self.seconds.items()}}
        self.path.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    """Only the controller records (an xdist worker has `workerinput`): it sees every worker's reports."""
    if config.getoption("--record-file-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(FILE_DURATIONS), "file-durations-recorder")
