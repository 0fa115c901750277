"""What the window shows when something fails: one readable sentence, never a traceback or an exception's name."""

from __future__ import annotations

import errno

import pytest

from app.readable_errors import error_kind, readable_error
from engine import errors

OUR_ERRORS = [cls for cls in vars(errors).values() if isinstance(cls, type) and issubclass(cls, errors.SpecChatError)]
OTHER_ERRORS = [
    RuntimeError("[load_safetensors] Failed to read"),
    ValueError("bad value"),
    KeyError("model.layers.0"),
    OSError(errno.EIO, "Input/output error"),
    MemoryError(),
    AssertionError(),
]


@pytest.mark.parametrize("error_class", OUR_ERRORS)
def test_our_errors_are_shown_as_they_are_said(error_class, isolated_home) -> None:
    message = "The prompt is too long: shorten it."
    shown = readable_error(error_class(message))
    assert shown == message and error_kind(error_class(message)) == error_class.__name__


@pytest.mark.parametrize("error", OTHER_ERRORS, ids=lambda e: type(e).__name__)
def test_anything_else_is_one_sentence_without_its_class_name_and_logged(error, isolated_home) -> None:
    try:
        raise error
    except BaseException as raised:  # noqa: BLE001 - as the workers catch it
        shown = readable_error(raised)
    assert shown.startswith("Something went wrong: ") and "\n" not in shown and "Traceback" not in shown
    assert type(error).__name__ not in shown and "Errno" not in shown and error_kind(error) == ""
    log = (isolated_home / "app-data" / "specchat.log").read_text()
    assert "Traceback" in log and type(error).__name__ in log  # the details are in the log, for bug reports
