"""The status bar's import progress: shown while a GGUF imports, and its Cancel ends the import keeping nothing."""

from __future__ import annotations

from pathlib import Path

from tests.engine.models.test_gguf_import import TYPES, _write_synthetic


def test_cancelling_an_import_keeps_nothing_and_the_loaded_pair(make_window, qtbot, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SPECCHAT_CACHE", str(tmp_path / "cache"))
    path, _, _ = _write_synthetic(tmp_path, TYPES)
    window = make_window()
    progress = window.load_status
    seen: list[tuple[str, int, int]] = []

    def cancel_on_first_report(stage: str, done: int, total: int) -> None:
        seen.append((stage, done, total))
        if len(seen) == 1:
            assert not progress.isHidden() and progress.label.text() == stage and progress.bar.value() == 1000 * done // total
            progress.cancel_button.click()

    window.session.load_progress.connect(cancel_on_first_report)
    with qtbot.waitSignal(window.session.load_cancelled, timeout=60_000) as cancelled:
        window.session.load_pair(str(path), "")
    assert "Import cancelled" in cancelled.args[0] and "still in use" in cancelled.args[0]
    assert progress.isHidden() and window.error_banner.isHidden()
    assert window.session.pair.target_name == "tiny-target" and not window.session.loading
    assert not any((tmp_path / "cache" / "gguf").glob("*/config.json"))
    assert seen[0][0].startswith("Importing") and "Import cancelled" in window.statusBar().currentMessage()
