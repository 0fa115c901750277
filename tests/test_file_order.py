"""The order test files go to xdist's workers in (tests/file_order.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests.file_order import DURATIONS, DurationRecorder, longest_files_first, recorded_seconds

ROOT = Path(__file__).resolve().parent.parent


class FakeItem:
    def __init__(self, nodeid: str, packaging: bool = False) -> None:
        self.nodeid = nodeid
        self.packaging = packaging

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "packaging" and self.packaging else None


def test_packaging_first_then_the_longest_files_by_their_selected_tests():
    """b.py's slow test was not selected (as `make test-fast` leaves it out): only what runs counts."""
    items = [FakeItem("tests/a.py::one"), FakeItem("tests/b.py::one"), FakeItem("tests/a.py::two"),
             FakeItem("tests/new.py::one"), FakeItem("tests/b.py::two"), FakeItem("tests/bundle.py::one", packaging=True)]
    seconds = {"tests/a.py::one": 2.0, "tests/a.py::two": 1.5, "tests/b.py::one": 3.0, "tests/b.py::two": 0.2,
               "tests/b.py::slow": 60.0, "tests/bundle.py::one": 0.1}
    longest_files_first(items, seconds)
    assert [item.nodeid for item in items] == [
        "tests/bundle.py::one", "tests/a.py::one", "tests/a.py::two", "tests/b.py::one", "tests/b.py::two",
        "tests/new.py::one"]


def test_a_recording_holds_each_long_test_it_ran_and_nothing_else(tmp_path):
    table = tmp_path / "durations.json"
    table.write_text('{"tests/gone.py::test": 3.0}')
    recorder = DurationRecorder(table)
    for nodeid, duration in (("tests/b.py::one", 1.25), ("tests/b.py::one", 0.5), ("tests/c.py::x[1]", 2.0),
                             ("tests/c.py::quick", 0.01)):
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=duration))
    recorder.pytest_sessionfinish()
    assert recorded_seconds(table) == {"tests/b.py::one": 1.75, "tests/c.py::x[1]": 2.0}


def test_this_sessions_tests_were_collected_in_that_order(request):
    """The plugin is in effect: the suite's own items (as a worker hands them to xdist's scheduler) are sorted."""
    items = list(request.session.items)
    longest_files_first(items, recorded_seconds(DURATIONS))
    assert [item.nodeid for item in items] == [item.nodeid for item in request.session.items]
