"""How a saved answer ended, and whether it can go on from there.

An answer ends at its own end (its end token or a stop string: "stop"), where the conversation filled the model's
context ("context"), or short of both: cut at its token limit ("length"), stopped ("cancelled"), interrupted by an
error ("error") or by a crash (saved while streaming, never finished: ""). One that ended short can go on from its
last token: the engine continues a conversation's trailing answer (`decoding.prompt_ids.continues_last_answer`).
"""

from __future__ import annotations

UNFINISHED = ("length", "cancelled", "error", "")


def can_go_on(role: str, content: str, finish: str) -> bool:
    """Whether a saved message is an answer with text that ended short of its own end (`finish` in UNFINISHED)."""
    return role == "assistant" and bool(content) and finish in UNFINISHED
