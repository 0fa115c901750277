"""The ranks' standard error as `launch._forward_errors` passes it on (no ranks started: a stream stands in)."""

from __future__ import annotations

import io
import threading

import pytest

from engine.distributed.launch import _forward_errors


def test_a_line_of_mlx_launchs_colour_codes_alone_is_not_passed_on(capsys: pytest.CaptureFixture[str]) -> None:
    """mlx.launch may write a colour reset on a line of its own after a rank's error: the user's one-line error
    came with a second line of nothing but '\\x1b[0m' (seen once in a fresh-clone run)."""
    failed = threading.Event()
    _forward_errors(io.StringIO("\033[31merror: No model at x.\n\033[0m\n\nplain text\n"), failed)
    assert capsys.readouterr().err.splitlines() == ["\033[31merror: No model at x.", "", "plain text"]
    assert failed.is_set()
