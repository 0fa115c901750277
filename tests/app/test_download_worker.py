"""The hub check's failures in plain words, not "[Errno -2] Name or service not known"."""

from __future__ import annotations

import socket
import ssl
import urllib.error

import pytest

from app.download_worker import why_unreachable


@pytest.mark.parametrize(
    "reason, words",
    [
        (socket.gaierror(-2, "Name or service not known"), "could not be looked up"),
        (TimeoutError("timed out"), "did not answer within"),
        (ConnectionRefusedError(111, "Connection refused"), "refused"),
        (ssl.SSLError("CERTIFICATE_VERIFY_FAILED"), "secure connection failed"),
        (OSError(101, "Network is unreachable"), "network connection failed"),
    ],
)
def test_network_failures_are_said_plainly(reason, words) -> None:
    said = why_unreachable(urllib.error.URLError(reason))
    assert words in said and "Errno" not in said and "[" not in said and type(reason).__name__ not in said
