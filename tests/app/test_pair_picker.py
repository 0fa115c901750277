"""The pair picker: first launch, offline, downloads with progress and cancel, only compatible drafts."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from engine.models.catalog import default_pair, recommended_pairs
from engine.models.model_store import remember_model


@pytest.fixture
def catalog_hub(fake_hub, tiny_dirs):
    """The loopback hub serving the catalog's repo ids: the default pair's target is big (3 MB, for progress
    and cancel); the 0.5B -> 3B pair is the loadable tiny pair."""
    default = default_pair()
    small = next(p for p in recommended_pairs() if p.id == "qwen2.5-0.5b-3b")
    fake_hub.add_folder(default.draft, tiny_dirs[1])
    big = fake_hub.add_folder(default.target, tiny_dirs[0])
    big.files["model.safetensors"] = os.urandom(3_000_000)
    fake_hub.add_folder(small.target, tiny_dirs[0])
    return fake_hub


def select_pair(picker, pair_id: str) -> None:
    for row in range(picker.table.topLevelItemCount()):
        item = picker.table.topLevelItem(row)
        if item.data(0, 0x0100) == pair_id:
            picker.table.setCurrentItem(item)
            return
    raise AssertionError(pair_id)


def test_first_launch_opens_the_picker_on_the_default_pair(make_window, qtbot, catalog_hub) -> None:
    window = make_window(pair=None, open_picker=True)
    qtbot.waitUntil(window.picker.isVisible, timeout=5_000)
    status = window.picker.selected_status()
    assert status.pair.id == default_pair().id and not status.downloaded
    assert window.picker.download_button.isEnabled() and not window.picker.use_button.isEnabled()
    assert f"Download {status.to_download_gb:.2f} GB to use it." in window.picker.status.text()
    assert window.picker.banner.isHidden()  # the (loopback) hub answers
    assert "Choose models" in window.statusBar().currentMessage()


def test_offline_it_says_so_and_offers_what_is_on_disk(make_window, qtbot, isolated_home, tiny_dirs, monkeypatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    remember_model(tiny_dirs[0])
    window = make_window(pair=None, open_picker=True)
    qtbot.waitUntil(lambda: not window.picker.banner.isHidden(), timeout=10_000)
    assert "The Hugging Face hub cannot be reached" in window.picker.banner.text()
    assert "open a model folder or a GGUF file" in window.picker.banner.text()
    assert window.picker.tabs.currentIndex() == 1
    assert window.picker.on_disk.targets.count() == 1
    select_pair(window.picker, default_pair().id)  # a pair not on disk: Download was offered, only to fail
    assert not window.picker.download_button.isEnabled() and "downloads once the hub can be reached" in window.picker.status.text()


def start_slow_download(make_window, qtbot, hub, bytes_per_second: int):
    """A window whose picker is part-way through downloading the default pair."""
    hub.bytes_per_second = bytes_per_second
    window = make_window(pair=None)
    picker = window.picker
    picker.refresh()
    select_pair(picker, default_pair().id)
    picker.download_button.click()
    qtbot.waitUntil(lambda: picker.progress.value() > 100, timeout=30_000)
    return window, picker


def test_download_shows_progress_and_cancel_stops_it(make_window, qtbot, catalog_hub) -> None:
    window, picker = start_slow_download(make_window, qtbot, catalog_hub, 400_000)
    assert picker.cancel_button.isVisibleTo(picker) and not picker.download_button.isVisibleTo(picker)
    assert "Downloading mlx-community/" in picker.status.text() and " of " in picker.status.text()
    picker.cancel_button.click()
    qtbot.waitUntil(lambda: "cancelled" in picker.status.text(), timeout=30_000)  # how soon: test_downloads.py
    assert "resume" in picker.status.text() and picker.download_button.isVisibleTo(picker)
    assert not picker.selected_status().downloaded


def test_a_downloaded_pair_can_be_used(make_window, qtbot, catalog_hub) -> None:
    window = make_window(pair=None)
    picker = window.picker
    picker.refresh()
    select_pair(picker, "qwen2.5-0.5b-3b")
    picker.download_button.click()
    qtbot.waitUntil(lambda: picker.selected_status().downloaded, timeout=30_000)
    assert picker.use_button.isEnabled()
    with qtbot.waitSignal(window.session.pair_loaded, timeout=30_000):
        picker.use_button.click()
    assert window.session.pair.target == "mlx-community/Qwen2.5-3B-Instruct-4bit"
    assert window.session.settings.pair() == (window.session.pair.target, window.session.pair.draft)


def test_a_built_in_drafter_pair_downloads_its_target_alone_and_drafts_with_its_heads(
        make_window, qtbot, fake_hub, mtp_target) -> None:
    """The catalog's MTP row: one repo to download (no draft), its drafter named in the list, and "Use this pair"
    loads the target alone, its own MTP heads among its drafters (Automatic, the default, drafts with them)."""
    pair = next(p for p in recommended_pairs() if p.drafter == "mtp")
    fake_hub.add_folder(pair.target, mtp_target.folder("hybrid-sidecar"))
    window = make_window(pair=None)
    picker = window.picker
    picker.refresh()
    select_pair(picker, pair.id)
    assert picker.table.currentItem().text(1) == "built-in MTP drafter"
    with qtbot.waitSignal(picker.download_requested) as requested:
        picker.download_button.click()
    assert requested.args == [[pair.target]]
    qtbot.waitUntil(lambda: picker.selected_status().downloaded, timeout=30_000)
    with qtbot.waitSignal(window.session.pair_loaded, timeout=60_000):
        picker.use_button.click()
    assert window.session.pair.draft is None and window.session.settings.pair() == (pair.target, "")
    assert "mtp" in window.session.pair.drafters and window.toolbar.drafter.combo.findData("mtp") >= 0
    assert window.toolbar.pair_label.text().endswith("· speculative, Automatic")  # the default: it drafts with the heads


def test_only_compatible_drafts_are_offered_with_reasons_for_the_rest(make_window, qtbot, isolated_home, tiny_dirs, other_tokenizer_model) -> None:
    for model in (tiny_dirs[0], tiny_dirs[1], other_tokenizer_model):
        remember_model(model)
    window = make_window(pair=None)
    picker = window.picker
    picker.refresh()
    picker.tabs.setCurrentIndex(1)
    rows = {picker.on_disk.targets.item(i).data(0x0100): i for i in range(picker.on_disk.targets.count())}
    picker.on_disk.targets.setCurrentRow(rows[str(tiny_dirs[0].resolve())])
    qtbot.waitUntil(lambda: picker.on_disk.drafts.count() > 1 or picker.on_disk.left_out.count() > 0, timeout=30_000)
    qtbot.waitUntil(lambda: picker.on_disk.drafts.count() + picker.on_disk.left_out.count() == 4, timeout=30_000)
    offered = [picker.on_disk.drafts.itemData(i) for i in range(picker.on_disk.drafts.count())]
    assert offered == ["", str(tiny_dirs[1].resolve())]
    left_out = picker.on_disk.left_out.item(0).text()
    assert left_out.startswith(f"other-model — {other_tokenizer_model.resolve().parent}: ") and "missing from the draft" in left_out
    with qtbot.waitSignal(window.session.pair_loaded, timeout=30_000):
        picker.on_disk.use_local_button.click()
    assert window.session.pair.draft == str(tiny_dirs[1].resolve())


def test_reopening_the_picker_with_a_pair_loaded_lists_each_draft_and_reason_once(
    make_window, qtbot, isolated_home, tiny_dirs, other_tokenizer_model
) -> None:
    """Ctrl+K with a pair loaded showed "2 compatible drafts", the draft twice and every reason twice: the target
    list was rebuilt with its signals on, so the drafts were checked twice and both answers added."""
    for model in (tiny_dirs[0], tiny_dirs[1], other_tokenizer_model):
        remember_model(model)
    window = make_window()
    tab = window.picker.on_disk
    requests, answers = [], []
    tab.drafts_check_requested.connect(lambda target, candidates: requests.append(target))
    window.session.engine.drafts_check_finished.connect(lambda target, verdicts: answers.append((target, verdicts)))
    target = str(tiny_dirs[0].resolve())
    window.open_picker()
    tab.targets.setCurrentRow({tab.targets.item(i).data(0x0100): i for i in range(tab.targets.count())}[target])
    qtbot.waitUntil(lambda: "compatible draft" in tab.draft_note.text() and len(answers) == len(requests), timeout=30_000)
    requests.clear()
    answers.clear()
    window.picker.hide()
    window.open_picker()  # what Ctrl+K does: the selected target is kept
    qtbot.waitUntil(lambda: requests and len(answers) == len(requests), timeout=30_000)
    assert requests == [target]
    window.session.engine.drafts_check_finished.emit(*answers[-1])  # an answer that arrives twice changes nothing
    assert [tab.drafts.itemData(i) for i in range(tab.drafts.count())] == ["", str(tiny_dirs[1].resolve())]
    assert tab.draft_note.text() == "1 compatible draft."
    left_out = [tab.left_out.item(i).text() for i in range(tab.left_out.count())]
    assert len(left_out) == 2 and "missing from the draft" in left_out[0]
    assert left_out[1] == f"{tiny_dirs[0].name} — {tiny_dirs[0].resolve().parent}: the target itself (a draft must be a smaller, faster model)"


def test_opening_a_folder_remembers_it(make_window, qtbot, tiny_dirs) -> None:
    window = make_window(pair=None)
    window.picker.on_disk.add_local(Path(tiny_dirs[0]))
    assert window.picker.on_disk.targets.currentItem().data(0x0100) == str(tiny_dirs[0].resolve())
    from engine.models.model_store import remembered_models

    assert [m.path for m in remembered_models()] == [tiny_dirs[0].resolve()]


def test_a_downloaded_model_can_be_deleted_from_the_picker(make_window, qtbot, fake_hub, monkeypatch) -> None:
    from PySide6.QtWidgets import QMessageBox

    from engine.models.downloads import download_model
    from engine.models.model_store import cached_models

    download_model("test/tiny-target")
    window = make_window(pair=None)
    picker = window.picker
    picker.refresh()
    picker.tabs.setCurrentIndex(1)
    rows = {picker.on_disk.targets.item(i).data(0x0100): i for i in range(picker.on_disk.targets.count())}
    picker.on_disk.targets.setCurrentRow(rows["test/tiny-target"])
    assert picker.on_disk.delete_button.isEnabled()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.No)
    picker.on_disk.delete_button.click()
    assert [m.name for m in cached_models()] == ["test/tiny-target"]
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    picker.on_disk.delete_button.click()
    assert cached_models() == [] and "Deleted test/tiny-target" in picker.on_disk.draft_note.text()
    assert "test/tiny-target" not in {picker.on_disk.targets.item(i).data(0x0100) for i in range(picker.on_disk.targets.count())}


def test_a_pair_that_does_not_fit_is_loaded_only_if_the_user_agrees(make_window, qtbot, isolated_home, tiny_dirs, monkeypatch) -> None:
    from PySide6.QtWidgets import QMessageBox

    monkeypatch.setattr("app.local_models.check_fit", lambda required: __import__("engine.models.memory", fromlist=["Fit"]).Fit(50.0, 8.0))
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warnings.append(a[2]) or QMessageBox.StandardButton.No)
    remember_model(tiny_dirs[0])
    window = make_window(pair=None)
    picker = window.picker
    picker.refresh()
    picker.on_disk.targets.setCurrentRow(0)
    picker.on_disk.use_local_button.click()
    assert window.session.pair is None and window.toolbar.pair_label.text() == "No models loaded"
    assert warnings[0].startswith("Does not fit: needs about 50.0 GB but this machine gives models about 8.0 GB.")
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: QMessageBox.StandardButton.Yes)
    with qtbot.waitSignal(window.session.pair_loaded, timeout=30_000):
        picker.on_disk.use_local_button.click()


def test_closing_during_a_download_stops_it_cleanly(make_window, qtbot, catalog_hub) -> None:
    window, picker = start_slow_download(make_window, qtbot, catalog_hub, 300_000)
    window.close()
    assert window.session.download_thread.isFinished() and window.session.engine_thread.isFinished()
    assert not picker.selected_status().downloaded


def test_after_a_restart_the_picker_opens_on_the_pair_in_use(make_window, qtbot, tiny_dirs) -> None:
    """A launch loads the saved pair, but the picker opened on no target (or the default catalog pair): the pair in
    use is preselected, its draft too (here none, where the list would offer the draft model first)."""
    for model in tiny_dirs:
        remember_model(model)
    window = make_window(pair=(str(tiny_dirs[0]), ""))
    assert window.session.pair is not None and window.session.pair.draft is None
    tab = window.picker.on_disk
    window.open_picker()
    assert window.picker.tabs.currentIndex() == 1
    assert tab.targets.currentItem().data(0x0100) == str(tiny_dirs[0].resolve())
    qtbot.waitUntil(lambda: "compatible draft" in tab.draft_note.text(), timeout=30_000)
    assert tab.drafts.count() == 2 and tab.drafts.currentData() == ""


def test_choosing_the_pair_in_use_closes_the_picker_without_reloading_it(make_window, qtbot, tiny_dirs) -> None:
    """A new user pressed Use on the pair already loaded and waited for it to load again (any answer stopped); a
    different draft with the same target is another pair, and loads."""
    for model in tiny_dirs:
        remember_model(model)
    window = make_window(pair=(str(tiny_dirs[0]), ""))
    tab, chosen = window.picker.on_disk, []
    window.picker.pair_chosen.connect(lambda target, draft: chosen.append((target, draft)))
    window.open_picker()
    qtbot.waitUntil(lambda: tab.drafts.count() == 2, timeout=30_000)
    tab.use_local()
    assert chosen == [] and not window.picker.isVisible()
    window.open_picker()
    qtbot.waitUntil(lambda: tab.drafts.count() == 2, timeout=30_000)
    tab.drafts.setCurrentIndex(tab.drafts.findData(str(tiny_dirs[1].resolve())))
    tab.use_local()
    assert chosen == [(str(tiny_dirs[0].resolve()), str(tiny_dirs[1].resolve()))]


def test_a_catalog_pair_in_use_is_preselected_in_the_recommended_list(make_window) -> None:
    window = make_window(pair=None)
    pair = next(p for p in recommended_pairs() if p.id != default_pair().id)
    window.picker.tabs.setCurrentIndex(1)
    window.picker.refresh((pair.target, pair.draft))
    assert window.picker.selected_status().pair.id == pair.id and window.picker.tabs.currentIndex() == 0


def needs_more_room(view, text: str, shown) -> bool:
    """Whether `text`, wrapped at a cell's width less Qt's text margins, is wider or taller than the cell shows."""
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtWidgets import QStyle

    margins = 2 * (view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin) + 1)
    needed = view.fontMetrics().boundingRect(QRect(0, 0, shown.width() - margins, 10_000), Qt.TextFlag.TextWordWrap, text)
    return needed.width() > shown.width() - margins or needed.height() > shown.height()


@pytest.mark.parametrize("size", [None, (900, 600)])
def test_every_row_and_column_shows_its_text(make_window, qtbot, tiny_dirs, tmp_path, size) -> None:
    """At the default size and at 900x600, the recommended list's last column ("On this computer") was cut off and
    a long target row ended in "…" (its "base model" note seen only on hover)."""
    import shutil

    long_named = shutil.copytree(tiny_dirs[0], tmp_path / ("a-folder-with-a-rather-long-name-" * 2) / "tiny-target")
    remember_model(long_named)
    window = make_window(pair=None)
    picker = window.picker
    if size:
        picker.resize(*size)
    picker.show()
    qtbot.waitExposed(picker)
    table = picker.table
    assert table.header().length() <= table.viewport().width()
    for row in range(table.topLevelItemCount()):
        for column in range(table.columnCount()):
            index = table.model().index(row, column)
            assert not needs_more_room(table, index.data(), table.visualRect(index)), index.data()
    picker.tabs.setCurrentIndex(1)
    targets = picker.on_disk.targets
    qtbot.waitUntil(lambda: targets.viewport().width() > 100)
    for row in range(targets.count()):
        item = targets.item(row)
        shown = targets.visualItemRect(item)
        assert shown.right() <= targets.viewport().width() and not needs_more_room(targets, item.text(), shown), item.text()


def test_the_picker_opens_within_the_screen(make_window) -> None:
    """It opened 1000 px wide whatever the screen: on a 900x600 one its right edge and buttons were off it."""
    window = make_window(pair=None)
    room = window.screen().availableGeometry().size()
    assert window.picker.width() <= room.width() and window.picker.height() <= room.height()
