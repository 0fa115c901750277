"""OpenAI fields the server cannot honour: said in a warning, never dropped without a word."""

from __future__ import annotations

import httpx

from engine.serving.unhonoured_fields import unhonoured_notes


def test_each_field_set_to_ask_for_something_is_a_note_naming_it() -> None:
    body = {"best_of": 3, "suffix": "end", "presence_penalty": 0.5, "frequency_penalty": 1, "logit_bias": {"50256": -100}}
    notes = unhonoured_notes(body)
    assert [note.split()[0] for note in notes] == ["best_of"]  # the penalties, the bias and the suffix are applied


def test_fields_that_ask_for_nothing_are_no_note() -> None:
    body = {"best_of": 1, "suffix": "", "user": "me"}
    assert unhonoured_notes(body) == [] and unhonoured_notes({"suffix": None}) == []
    assert unhonoured_notes({"best_of": True}) == ["best_of one answer is generated and returned"]  # True is not 1


def test_the_server_says_what_it_did_not_honour(tiny_url) -> None:
    body = {"model": "tiny-target", "prompt": "The sea is", "max_tokens": 2}
    warned = httpx.post(tiny_url + "/v1/completions", json={**body, "best_of": 2}, timeout=30)
    assert warned.status_code == 200 and "best_of one answer" in warned.headers["x-specchat-warning"]
    assert "x-specchat-warning" not in httpx.post(tiny_url + "/v1/completions", json=body, timeout=30).headers
