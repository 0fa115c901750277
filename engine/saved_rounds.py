"""A saved answer's rounds as events again: the trace records a chat keeps (`RoundEvent.trace_record`) read back, so
that a reopened chat's answer can be shown round by round as it was while it streamed."""

from __future__ import annotations

from typing import Any

from .conversations import StoredMessage
from .events import RoundEvent


def saved_round(record: dict[str, Any]) -> RoundEvent:
    """The RoundEvent a trace record was written from (a record of an older version lacks the newer fields: their
    defaults stand in)."""
    return RoundEvent(
        round=record["round"], drafted=record["verified"], accepted=record["accepted"], emitted=record["emitted"],
        drafter=record["drafter"], draft_s=record["draft_s"], verify_s=record["verify_s"],
        draft=tuple(record.get("draft", ())), draft_text=tuple(record.get("draft_text", ())), p=tuple(record.get("p", ())),
        q=tuple(record.get("q", ())), next_token=record.get("next"), predicted_tps=record.get("predicted_tps"),
        predicted_tps_plain=record.get("predicted_tps_plain"), timed=record.get("timed", False),
        ssd_hit=record.get("ssd_hit"), predrafted=record.get("predrafted", 0), predraft_wasted=record.get("predraft_wasted", 0),
        hidden_draft_s=record.get("hidden_draft_s", 0.0), reasoning=record.get("reasoning", False),
        network_s=record.get("network_s"),
    )


def saved_rounds(trace: list[dict[str, Any]]) -> list[RoundEvent]:
    """Every round of a saved answer's trace, in order."""
    return [saved_round(record) for record in trace]


def last_answer(thread: list[StoredMessage]) -> StoredMessage | None:
    """A thread's last answer (None when it has none yet)."""
    return next((message for message in reversed(thread) if message.role == "assistant"), None)


def ended_on_end_token(answer: StoredMessage, rounds: list[RoundEvent]) -> bool:
    """Whether a saved answer ended on an end token: it stopped ("stop") short of the tokens its last round produced
    (its accepted drafts and the target's own token). The end token is not in the answer, but its pass produced it,
    and `GenerationStats.tokens_per_pass` counts it; the trace does not say which token it was. A stop string met
    before a round's last token reads the same (one token more in the count)."""
    if answer.finish != "stop" or not rounds:
        return False
    last = rounds[-1]
    return last.emitted < (last.accepted + 1 if last.drafted else 1)
