"""Completions' suffix: read for completions alone and never with echo; a model without fill-in-the-middle tokens
refuses it with a 400 that names models that have them."""

from __future__ import annotations

import httpx
import pytest

from engine.serving.api_error import ApiError
from engine.serving.completion_suffix import suffix_requested


def test_a_suffix_is_read_for_completions() -> None:
    assert suffix_requested({"suffix": "\\n}"}, "completions") == "\\n}"
    assert suffix_requested({"suffix": ""}, "completions") is None and suffix_requested({}, "chat") is None


@pytest.mark.parametrize("body, endpoint, param", [({"suffix": "x"}, "chat", "suffix"), ({"suffix": "x", "echo": True}, "completions", "echo"),
                                                   ({"suffix": 3}, "completions", "suffix")])
def test_a_suffix_where_it_cannot_be_used_is_refused(body: dict, endpoint: str, param: str) -> None:
    with pytest.raises(ApiError) as refused:
        suffix_requested(body, endpoint)
    assert (refused.value.status, refused.value.param) == (400, param)


def test_a_model_without_fill_in_the_middle_tokens_refuses_a_suffix(tiny_url) -> None:
    body = {"model": "tiny-target", "prompt": "def add(a, b):\n    return ", "suffix": "\n", "max_tokens": 4}
    refused = httpx.post(tiny_url + "/v1/completions", json=body, timeout=30)
    assert refused.status_code == 400 and "no fill-in-the-middle tokens" in refused.json()["error"]["message"]
    assert httpx.post(tiny_url + "/v1/completions", json={**body, "suffix": ""}, timeout=30).status_code == 200
