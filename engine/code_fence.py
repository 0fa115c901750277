"""A Markdown code fence that quotes a text whole: a fence is closed by a line of at least as many backticks, so
it must be longer than any run of three or more in the text (a file attached to a message, a tool's result in an
export)."""

from __future__ import annotations

import re


def fence_for(text: str) -> str:
    """Backticks, at least three, one more than the longest run of three or more in `text`."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    return "`" * (longest + 1)
