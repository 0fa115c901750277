"""Stop strings end generation and are never shown, even when they span tokens."""

from __future__ import annotations

from engine.decoding.stop_strings import StopStrings
from engine.events import TokenEvent


def run(pieces: list[str], stops: tuple[str, ...]) -> tuple[str, bool, list[int]]:
    s = StopStrings(stops)
    shown: list[TokenEvent] = []
    for i, piece in enumerate(pieces):
        shown += s.push(TokenEvent(i, piece, "target", 0))
        if s.stopped:
            break
    shown += s.flush()
    return "".join(e.text for e in shown), s.stopped, [e.token for e in shown]


def test_no_stop_strings_pass_everything_through() -> None:
    assert run(["a", "b"], ()) == ("ab", False, [0, 1])


def test_a_stop_string_inside_one_token() -> None:
    assert run(["Hello", " wor", "ld</s>tail", "more"], ("</s>",)) == ("Hello world", True, [0, 1, 2])


def test_a_stop_string_spanning_tokens_is_never_shown() -> None:
    text, stopped, _ = run(["one ", "two ", "ST", "O", "P", " three"], ("STOP",))
    assert (text, stopped) == ("one two ", True)


def test_a_partial_match_that_fails_is_released() -> None:
    assert run(["ST", "OCK", " up"], ("STOP",)) == ("STOCK up", False, [0, 1, 2])


def test_text_is_held_only_while_it_could_start_a_stop_string() -> None:
    s = StopStrings(("END",))
    assert [e.text for e in s.push(TokenEvent(0, "the E", "target", 0))] == []
    assert [e.text for e in s.push(TokenEvent(1, "x", "target", 0))] == ["the E", "x"]


def test_the_earliest_of_several_stop_strings_wins() -> None:
    assert run(["a", "bXc", "Yd"], ("Y", "X"))[0] == "ab"


def test_the_stop_string_that_ended_the_text_is_named() -> None:
    """Anthropic's API reports it as `stop_sequence`: the earliest in the text, not the first in the list."""
    s = StopStrings(("END", "##"))
    assert [e.text for e in s.push(TokenEvent(0, "a ## b END", "target", 0))] == ["a "]
    assert (s.stopped, s.matched) == (True, "##")
    assert StopStrings(("END",)).matched is None
