"""The order test files are handed to xdist's workers in: the bundle build first, then the longest files first.

Under the Makefile's `--dist loadfile --no-loadscope-reorder`, xdist hands whole files to whichever worker is free,
in collection order. Files in plain path order leave whichever long file comes last running alone at the end while
the other worker waits (6 s of `make test-fast`'s 3 minutes with tests/engine/serving/test_tool_grammar.py last).
Longest first, the short files at the end fill both workers until they finish together.

How long a file takes is measured, not guessed: `tests/durations.json` holds the seconds each test took (setup, call
and teardown) in the last run made with `--record-file-durations`, and a file's length is the sum over its tests
that this run selected (`make test-fast` leaves out a file's slow tests, which a file-wide figure would count). Only
tests that took `LISTED_FROM_S` or more are listed (a few hundred of two thousand); one not listed counts as
`UNLISTED_TEST_S`, about what those took on average. Stale numbers only cost balance, never a test.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
LISTED_FROM_S = 0.1
UNLISTED_TEST_S = 0.02


def file_of(nodeid: str) -> str:
    """`tests/app/test_x.py::test_y[a]` -> `tests/app/test_x.py`."""
    return nodeid.split("::", 1)[0]


def longest_files_first(items: list[pytest.Item], seconds: Mapping[str, float]) -> None:
    """Sort in place: packaging tests first (minutes on PyInstaller in a child process, best overlapped with the other
    worker's tests from the start), then files by the recorded seconds of their tests among `items`, longest first.
    The sort is stable, so a file's tests keep their order and stay together."""
    per_file: dict[str, float] = defaultdict(float)
    for item in items:
        per_file[file_of(item.nodeid)] += seconds.get(item.nodeid, UNLISTED_TEST_S)

    def key(item: pytest.Item) -> tuple[bool, float]:
        return item.get_closest_marker("packaging") is None, -per_file[file_of(item.nodeid)]

    items.sort(key=key)


def recorded_seconds(path: Path = DURATIONS) -> dict[str, float]:
    return json.loads(path.read_text()) if path.exists() else {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-file-durations", action="store_true",
                     help=f"write each test's seconds into tests/{DURATIONS.name}, for the order files run in")


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected: only the tests that will run count
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    longest_files_first(items, recorded_seconds())


class DurationRecorder:
    """Sums each test's phases as the reports arrive (on xdist's controller, from every worker) and writes the long
    ones when the run ends: the table is the last recorded run's, so a test renamed or deleted leaves no line behind
    (record with the whole suite)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self) -> None:
        table = {nodeid: round(s, 2) for nodeid, s in sorted(self.seconds.items()) if s >= LISTED_FROM_S}
        self.path.write_text(json.dumps(table, indent=0) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    """Only the controller records (an xdist worker has `workerinput`): it sees every worker's reports."""
    if config.getoption("--record-file-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(DURATIONS), "file-durations-recorder")
