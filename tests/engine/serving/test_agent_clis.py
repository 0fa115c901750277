"""Where the agent CLIs come from: the installed ones first, and a skip that says what is missing."""

from __future__ import annotations

import shutil

import pytest

from tests.engine.serving import agent_clis


def test_an_installed_cli_is_used_as_it_is(monkeypatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: f"/opt/bin/{name}")
    assert agent_clis.agent_cli("codex") == "/opt/bin/codex"


def test_without_the_cli_or_npm_the_test_is_skipped_naming_the_version_it_would_install(monkeypatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="no npm to install @anthropic-ai/claude-code@"):
        agent_clis.agent_cli("claude")
