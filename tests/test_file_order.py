"""The order test files go to xdist's workers in (tests/file_order.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.file_order import FILE_DURATIONS, DurationRecorder, longest_files_first, recorded_seconds

ROOT = Path(__file__).resolve().parent.parent


class FakeItem:
    def __init__(self, nodeid: str, packaging: bool = False) -> None:
        self.nodeid = nodeid
        self.packaging = packaging

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "packaging" and self.packaging else None


def test_packaging_first_then_the_longest_files_with_each_files_tests_in_order():
    items = [FakeItem("tests/a.py::one"), FakeItem("tests/b.py::one"), FakeItem("tests/a.py::two"),
             FakeItem("tests/new.py::one"), FakeItem("tests/b.py::two"), FakeItem("tests/bundle.py::one", packaging=True)]
    longest_files_first(items, {"tests/a.py": 0.5, "tests/b.py": 20.0, "tests/bundle.py": 0.1})
    assert [item.nodeid for item in items] == [
        "tests/bundle.py::one", "tests/b.py::one", "tests/b.py::two", "tests/new.py::one", "tests/a.py::one",
        "tests/a.py::two"]


def test_a_recording_rewrites_the_files_it_ran_and_keeps_the_others(tmp_path):
    table = tmp_path / "durations.json"
    table.write_text(json.dumps({"tests/a.py": 3.0, "tests/b.py": 4.0}))
    recorder = DurationRecorder(table)
    for nodeid, duration in (("tests/b.py::one", 1.25), ("tests/b.py::one", 0.5), ("tests/c.py::x[1]", 2.0)):
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=duration))
    recorder.pytest_sessionfinish()
    assert recorded_seconds(table) == {"tests/a.py": 3.0, "tests/b.py": 1.75, "tests/c.py": 2.0}


def test_the_recorded_table_names_only_test_files_that_exist():
    """A file renamed or deleted would otherwise keep its line forever (a recording only adds and rewrites)."""
    missing = [name for name in recorded_seconds(FILE_DURATIONS) if not (ROOT / name).is_file()]
    assert not missing, f"stale lines in {FILE_DURATIONS.name}: {missing}; delete them"


def test_this_sessions_tests_were_collected_in_that_order(request):
    """The plugin is in effect: the suite's own items (as a worker hands them to xdist's scheduler) are sorted."""
    items = list(request.session.items)
    longest_files_first(items, recorded_seconds(FILE_DURATIONS))
    assert [item.nodeid for item in items] == [item.nodeid for item in request.session.items]
