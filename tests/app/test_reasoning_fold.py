"""The reasoning fold on a driven token stream: folded under the header, expanded on a click, coloured by origin,
each round's ghosts in the view where the round ended, and every token's place in its round counted across both."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.message_widget import MessageWidget
from app.reasoning_fold import route, thought_for
from engine.events import PartStats, RoundEvent, TokenEvent
from tests.app.test_token_view import document_pieces


def driven_stream() -> list[object]:
    """<think> + two rounds of reasoning, a round that closes it and starts the answer, and an answer round."""
    def round_event(index: int, drafted: int, accepted: int, emitted: int, draft_text: tuple[str, ...], thinking: bool):
        return RoundEvent(index, drafted, accepted, emitted, "model", 0.0, 0.0, draft=tuple(range(drafted)),
                          draft_text=draft_text, p=tuple(0.9 - 0.1 * i for i in range(drafted)),
                          q=(1.0,) * drafted, reasoning=thinking)

    return [
        TokenEvent(1, "", "target", 0, "marker"),
        round_event(0, 0, 0, 1, (), False),
        TokenEvent(10, "The user ", "accepted", 1, "reasoning"),
        TokenEvent(11, "asks", "corrected", 1, "reasoning"),
        round_event(1, 3, 1, 2, ("The user ", "wants", " x"), True),
        TokenEvent(12, " about Paris", "accepted", 2, "reasoning"),
        TokenEvent(2, "", "accepted", 2, "marker"),
        TokenEvent(13, "Paris", "accepted", 2, "answer"),
        TokenEvent(14, ".", "corrected", 2, "answer"),
        round_event(2, 4, 3, 4, (" about Paris", "</think>", "Paris", "!"), True),
    ]


def test_route_counts_places_across_parts_and_sends_a_rounds_ghost_where_it_ended() -> None:
    places: dict[int, int] = {}
    reasoning, answer, records, last = route(driven_stream(), places, "answer")
    assert [(r.text, r.index) for r in reasoning if not isinstance(r, dict)] == [("The user ", 0), ("asks", 1), (" about Paris", 0)]
    assert [(r.text, r.index) for r in answer if not isinstance(r, dict)] == [("Paris", 2), (".", 3)]
    assert [r["round"] for r in reasoning if isinstance(r, dict)] == [1]  # round 2 ended in the answer
    assert [r["round"] for r in answer if isinstance(r, dict)] == [0, 2]
    assert sorted(records) == [0, 1, 2] and last == "answer" and places == {0: 1, 1: 2, 2: 4}


def test_reasoning_streams_folded_under_the_header_and_a_click_unfolds_it(qtbot) -> None:
    message = MessageWidget("assistant")
    qtbot.addWidget(message)
    message.show()
    assert message.fold.isHidden()
    stream = driven_stream()
    message.append_events(stream[:5])
    assert message.fold.isVisible() and message.fold.toggle.text() == "Thinking…"
    assert not message.fold.expanded and message.fold.view.isHidden()
    message.append_events(stream[5:])
    assert message.fold.toggle.text().startswith("Thought for ")
    assert message.body.answer_text() == "Paris." and message.fold.view.answer_text() == "The user asks about Paris"
    reasoning_pieces = document_pieces(message.fold.view)
    assert [p[2] for p in reasoning_pieces if p[0] == "token"] == ["accepted", "corrected", "accepted"]
    assert ("ghost", 1, "wants x") in reasoning_pieces  # the round that ended in the reasoning keeps its ghost there
    assert ("ghost", 2, "!") in document_pieces(message.body) and ("ghost", 2, "!") not in reasoning_pieces
    assert "(K = 4, model)" in message.body.tooltip_at(0) and "p(d) = 0.700" in message.body.tooltip_at(0)  # 3rd of round
    qtbot.mouseClick(message.fold.toggle, Qt.MouseButton.LeftButton)
    assert message.fold.expanded and message.fold.view.isVisible()
    qtbot.mouseClick(message.fold.toggle, Qt.MouseButton.LeftButton)
    assert not message.fold.expanded and message.fold.view.isHidden()


def test_a_saved_answer_shows_its_reasoning_folded_with_its_figures(qtbot) -> None:
    message = MessageWidget("assistant")
    qtbot.addWidget(message)
    runs = [["", "target", 0, "marker"], ["Hmm", "accepted", 1, "reasoning"], ["", "accepted", 1, "marker"],
            ["Yes.", "bonus", 1]]
    record = RoundEvent(1, 2, 2, 3, "model", 0.0, 0.0, draft=(5, 6), draft_text=("Hmm", "</think>"), p=(1.0, 1.0),
                        q=(1.0, 1.0), reasoning=True).trace_record()
    stored = type("Stored", (), dict(content="Yes.", runs=runs, trace=[record], summary="s", finish="stop",
                                     reasoning="Hmm", reasoning_s=12.4))()
    message.show_stored(stored, markdown=False)
    assert not message.fold.isHidden() and not message.fold.expanded
    assert message.fold.toggle.text() == "Thought for 12 s"
    assert message.fold.figures.text() == "while thinking: 100% of 2 drafted accepted, 3.0 tokens per pass"
    assert message.fold.view.answer_text() == "Hmm" and message.body.answer_text() == "Yes."
    assert [p[3] for p in document_pieces(message.body) if p[0] == "token"] == [2]  # its place after the marker


def test_an_answer_without_reasoning_has_no_fold(qtbot) -> None:
    message = MessageWidget("assistant")
    qtbot.addWidget(message)
    message.append_events([TokenEvent(1, "Hi", "target", 0)])
    message.fold.show_reasoning("", 0.0, PartStats())
    assert message.fold.isHidden()
    assert thought_for(3.25) == "Thought for 3.2 s" and thought_for(None) == "Thinking…"
