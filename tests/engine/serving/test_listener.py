"""Where the server listens: loopback unless a key guards it, and a clear error for a port in use."""

from __future__ import annotations

import pytest

from engine.errors import SpecChatError
from engine.serving.listener import bind, check_host


def test_serving_beyond_loopback_needs_a_key() -> None:
    with pytest.raises(SpecChatError, match="--api-key"):
        check_host("0.0.0.0", None)
    check_host("0.0.0.0", "key")
    check_host("127.0.0.1", None)
    check_host("::1", None)


def test_a_port_in_use_is_a_clear_error() -> None:
    taken = bind("127.0.0.1", 0)
    try:
        with pytest.raises(SpecChatError, match="in use. Pick another port"):
            bind("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()
