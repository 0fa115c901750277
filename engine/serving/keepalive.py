"""Keeping a stream's connection alive while nothing is said: agents (Claude Code) drop a connection that stays
silent for 5 minutes and retry, throwing the work away, and a request may wait that long in the queue or while its
prompt is read. SSE comments fill the silence; every client's parser skips them.

Comments keep the bytes flowing, which is what HTTP clients and proxies time out on. Claude Code (2.1.x) also
watches the events its SDK parses: its stream watchdog aborts after 5 minutes without one, and counts neither
comments (the SDK drops them) nor Anthropic's `ping` (it skips those before resetting the watchdog). So a stream
that has begun also sends, every `PROGRESS_EVENT_S` without an event, one its API allows mid-stream that changes
nothing in the answer (`Render.progress`: Anthropic's is a `message_delta` with no stop reason yet), and a stream
whose job waits in the queue that long begins there, so that it can.
"""

from __future__ import annotations

import asyncio

from ..events import PrefillEvent

KEEPALIVE_S = 10.0  # the longest silence on a stream: Claude Code drops a connection silent for 5 minutes
PROGRESS_EVENT_S = 120.0  # the longest a begun stream goes without an event: well within Claude Code's 5 minutes
KEEPALIVE = b": keep-alive\n\n"  # an SSE comment: every client's parser skips it


def prefill_comment(event: PrefillEvent) -> bytes:
    """How far the prompt's reading has come, as an SSE comment: none of the three APIs has an event for it, and a
    comment keeps the connection alive while a long prompt is read and tells a person watching the stream why."""
    return f": reading the prompt ({event.model}): {event.processed} of {event.total} tokens\n\n".encode()


class CommentsSuffice:
    """A stream whose clients (the OpenAI ones tried) wait on bytes, which the keep-alive comments carry: it sends no
    progress event."""

    def progress(self) -> list[bytes]:
        return []


PENDING = object()  # no event yet: the job waits in the queue or its prompt is being read


async def waited(events: asyncio.Queue, interval: float) -> object:
    """The job's next event, or PENDING after `interval` seconds without one (a keep-alive is due)."""
    try:
        return await asyncio.wait_for(events.get(), interval)
    except TimeoutError:
        return PENDING
