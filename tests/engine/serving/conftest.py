"""Engine threads serving the tiny pairs, shared by the server tests of every API (each loads its pair once), a
check of what a Lark grammar takes, and the agent CLIs the client tests drive."""

from __future__ import annotations

import pytest
from llguidance import LLMatcher

from engine.decoding.constraint import grammar_tokenizer
from engine.decoding.pair import ModelPair
from engine.serving.generation_queue import EngineThread


def _engine(target, draft) -> EngineThread:
    engine = EngineThread(lambda: ModelPair.load(str(target), str(draft)), str(target))
    engine.start()
    return engine


@pytest.fixture(scope="session")
def tiny_engine(tiny_dirs):
    """The tiny pair on its own engine thread (the server's runner)."""
    engine = _engine(*tiny_dirs)
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def tool_engine(tool_dirs):
    """The tiny pair with the tool-calling template on its own engine thread."""
    engine = _engine(*tool_dirs)
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def tiny_url(tiny_engine):
    """The base URL (without /v1) of a greedy server over the tiny pair."""
    from tests.engine.serving.scripted import serving

    with serving(tiny_engine) as url:
        yield url


@pytest.fixture(scope="session")
def thinking_url(thinking_dirs):
    """The base URL (without /v1) of a greedy server over the tiny thinking pair (Qwen3-style template)."""
    from tests.engine.serving.scripted import serving

    engine = _engine(*thinking_dirs(False))
    try:
        with serving(engine) as url:
            yield url
    finally:
        engine.stop()


@pytest.fixture(scope="session")
def takes(tool_target):
    """takes(grammar, text): whether the Lark grammar takes the whole text and may end there."""
    tokenizer = tool_target.tokenizer
    characters = grammar_tokenizer(tokenizer, len(tokenizer._tokenizer))

    def check(lark: str, text: str) -> bool:
        matcher = LLMatcher(characters, LLMatcher.grammar_from_lark(lark))
        ids = tokenizer.encode(text, add_special_tokens=False)
        return matcher.try_consume_tokens(ids) == len(ids) and bool(matcher.is_accepting())

    return check


@pytest.fixture(scope="session")
def claude_cli() -> str:
    """Claude Code's command (`agent_clis`)."""
    from tests.engine.serving.agent_clis import agent_cli

    return agent_cli("claude")


@pytest.fixture(scope="session")
def codex_cli() -> str:
    """Codex CLI's command (`agent_clis`)."""
    from tests.engine.serving.agent_clis import agent_cli

    return agent_cli("codex")
