"""The picker's draft checks are remembered across launches, and checked again once a model's files change."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from engine.drafters import draft_checks
from engine.drafters.draft_checks import DraftChecks


def counting_checks(monkeypatch) -> list[tuple[str, str]]:
    calls: list[tuple[str, str]] = []
    real = draft_checks.check_draft
    monkeypatch.setattr(draft_checks, "check_draft", lambda target, draft, progress=None: calls.append((target, draft))
                        or real(target, draft, progress))
    return calls


def test_a_verdict_is_read_once_and_remembered_by_the_files_it_was_read_from(tiny_dirs, tmp_path: Path, monkeypatch) -> None:
    """With Qwen's and Gemma's tokenizers listed, the picker's check took 60-90 s on every launch."""
    target = shutil.copytree(tiny_dirs[0], tmp_path / "target")
    draft, file = str(tiny_dirs[1]), tmp_path / "checks.json"
    calls = counting_checks(monkeypatch)
    first = DraftChecks(file).check(str(target), draft)
    again = DraftChecks(file).check(str(target), draft)  # the next launch
    assert first == again and first.compatible and len(calls) == 1
    tokenizer = target / "tokenizer.json"
    os.utime(tokenizer, ns=(tokenizer.stat().st_atime_ns, tokenizer.stat().st_mtime_ns + 10**9))  # converted again
    assert DraftChecks(file).check(str(target), draft) == first and len(calls) == 2


def test_a_damaged_file_of_verdicts_starts_empty(tiny_dirs, tmp_path: Path) -> None:
    file = tmp_path / "checks.json"
    file.write_text("{not json")
    assert DraftChecks(file).check(str(tiny_dirs[0]), str(tiny_dirs[1])).compatible
    assert file.read_text().startswith("{")
