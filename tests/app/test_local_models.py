"""The picker's "On this computer" tab: bad folders and files refused when opened, damaged ones named and
removable, and never offered (or preselected) as a draft."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.local_models import NO_DRAFT, model_label
from engine.drafter_kinds import drafter_label, heading
from engine.events import RoundEvent
from engine.models.model_store import _remembered_file, remember_model, remembered_models
from tests.app.conftest import choose_drafter, send_and_wait


def damaged_copy(source: Path, out: Path) -> Path:
    shutil.copytree(source, out)
    weights = out / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 3])
    return out


def rows(tab) -> dict[str, int]:
    return {tab.targets.item(i).data(0x0100): i for i in range(tab.targets.count())}


def test_a_folder_or_file_that_is_not_a_model_is_refused_with_the_reason(make_window, tmp_path: Path) -> None:
    """They used to join the target list, and their errors filled every target's "Not offered" box; then the error
    showed under the Draft box, though the target is what is wrong: it shows under the target list."""
    window = make_window(pair=None)
    tab = window.picker.on_disk
    (tmp_path / "notes").mkdir()
    fake = tmp_path / "model.gguf"
    fake.write_text("not really")
    tab.add_local(tmp_path / "notes")
    assert "is not a model folder" in tab.target_note.text() and tab.targets.count() == 0
    assert "is not a model folder" not in tab.draft_note.text()
    tab.add_local(fake)
    assert "is not a GGUF file" in tab.target_note.text() and tab.targets.count() == 0
    assert remembered_models() == [] and window.picker.tabs.currentIndex() == 1


def test_a_damaged_model_is_listed_as_such_never_offered_as_a_draft_and_can_be_removed(
    make_window, qtbot, tiny_dirs, tmp_path: Path
) -> None:
    """A folder damaged after it was opened was preselected as the draft of a good target, and "Use this pair"
    then failed; bad entries could not be removed at all."""
    damaged = damaged_copy(tiny_dirs[1], tmp_path / "damaged-draft")
    # As an older SpecChat saved it, before folders were checked when opened.
    _remembered_file().write_text(json.dumps([{"path": str(damaged)}, {"path": str(tiny_dirs[0].resolve())}]))
    window = make_window(pair=None)
    tab = window.picker.on_disk
    window.picker.refresh()
    tab.targets.setCurrentRow(rows(tab)[str(damaged)])
    assert "damaged" in tab.targets.currentItem().text() and not tab.use_local_button.isEnabled()
    assert "weights are damaged" in tab.target_note.text() and tab.draft_note.text() == ""
    tab.targets.setCurrentRow(rows(tab)[str(tiny_dirs[0].resolve())])
    qtbot.waitUntil(lambda: "draft" in tab.draft_note.text() and "Checking" not in tab.draft_note.text(), timeout=30_000)
    assert [tab.drafts.itemData(i) for i in range(tab.drafts.count())] == [""]  # not the damaged one
    with qtbot.waitSignal(window.session.pair_loaded, timeout=30_000):
        tab.use_local_button.click()
    assert window.session.pair.draft is None
    tab.targets.setCurrentRow(rows(tab)[str(damaged)])
    tab.forget_button.click()
    assert str(damaged) not in rows(tab) and damaged.exists()  # gone from the list, not from the disk


def test_a_drafter_is_kept_when_opened_listed_with_what_it_is_and_named_in_the_banner(
    make_window, qtbot, fake_hub, tiny_dirs, tmp_path: Path
) -> None:
    """A DFlash drafter: downloaded or opened, it is listed (greyed, with what it is: it is no target); for a
    target it does not fit it is not offered, and the reason is its own check's, not "not a chat model"; loaded as
    the draft of a target it does not fit, the banner gives that reason, not a traceback."""
    from engine.models.downloads import download_model
    from tests.model_folders import dflash_drafter

    drafter = dflash_drafter(tmp_path / "Qwen3-8B-DFlash-b16")
    remember_model(tiny_dirs[0])
    fake_hub.add_folder("z-lab/Qwen3-8B-DFlash-b16", drafter)
    download_model("z-lab/Qwen3-8B-DFlash-b16")
    window = make_window(pair=(str(tiny_dirs[0]), str(drafter)))
    banner = window.error_banner.text()
    assert banner.startswith("Qwen3-8B-DFlash-b16 is a DFlash drafter and cannot draft for tiny-target: ") and "\n" not in banner
    assert "Something went wrong" not in banner and "TypeError" not in banner

    tab = window.picker.on_disk
    tab.add_local(drafter)
    assert str(drafter.resolve()) in rows(tab)
    item = tab.targets.item(rows(tab)["z-lab/Qwen3-8B-DFlash-b16"])
    assert "(0.00 GB, downloaded, DFlash drafter, not a chat model)" in item.text()
    assert item.toolTip().startswith("z-lab/Qwen3-8B-DFlash-b16 is a DFlash drafter (z-lab), not a chat model: ")
    tab.targets.setCurrentItem(item)
    assert tab.target_note.text() == item.toolTip() and not tab.use_local_button.isEnabled()
    tab.targets.setCurrentRow(rows(tab)[str(tiny_dirs[0].resolve())])
    qtbot.waitUntil(lambda: checked(tab), timeout=30_000)
    left_out = [tab.left_out.item(i).text() for i in range(tab.left_out.count())]
    lines = [line for line in left_out if "DFlash" in line]
    assert len(lines) == 2 and all("is a DFlash drafter and cannot draft for tiny-target: its vocabulary has 384 "
                                   "tokens where the drafter has 151936" in line for line in lines), lines
    assert drafts_offered(tab) == [""]  # no draft model: the drafter is not offered


def test_a_base_model_is_named_as_one_in_the_picker_and_above_the_chat(make_window, qtbot, tmp_path: Path) -> None:
    """A model without a chat template continues text; the user used to learn it only from its answers."""
    from engine.fixtures.tiny_base_model import build_tiny_base_model
    from engine.models.base_model import BASE_MODEL_NOTE

    base = build_tiny_base_model(tmp_path).resolve()
    window = make_window(pair=None)
    tab = window.picker.on_disk
    tab.add_local(base)
    tab.targets.setCurrentRow(rows(tab)[str(base)])
    assert BASE_MODEL_NOTE in tab.targets.currentItem().text() and BASE_MODEL_NOTE in tab.targets.currentItem().toolTip()
    with qtbot.waitSignal(window.session.pair_loaded, timeout=30_000):
        tab.use_local_button.click()
    assert BASE_MODEL_NOTE in window.toolbar.pair_label.text()


def drafts_offered(tab) -> list[str]:
    return [tab.drafts.itemData(i) for i in range(tab.drafts.count())]


def checked(tab) -> bool:
    return "Checking" not in tab.draft_note.text()


def test_a_target_with_mtp_heads_loads_alone_and_its_built_in_drafter_is_chosen_in_the_toolbar(
    make_window, qtbot, mtp_target, tiny_dirs
) -> None:
    """The picker chooses what is loaded, not who drafts (issue 32): it offered "Built-in MTP drafter" as a draft,
    which loaded nothing. For a target with MTP heads it offers "No draft model" and says its heads need none; the
    heads load with the target, and the toolbar's Drafter choice offers them under the registry's name; chosen, they
    draft the answer."""
    mtp = mtp_target.folder("hybrid").resolve()
    for model in (mtp, tiny_dirs[0]):
        remember_model(model)
    window = make_window(pair=None)
    tab = window.picker.on_disk
    window.picker.refresh()
    tab.targets.setCurrentRow(rows(tab)[str(mtp)])
    qtbot.waitUntil(lambda: checked(tab), timeout=30_000)
    assert [tab.drafts.itemText(i) for i in range(tab.drafts.count())] == [NO_DRAFT] == ["No draft model"]
    assert not any("MTP" in tab.drafts.itemText(i) or "lookup" in tab.drafts.itemText(i) for i in range(tab.drafts.count()))
    assert "built-in MTP drafter needs none" in tab.draft_note.text()
    with qtbot.waitSignal(window.session.pair_loaded, timeout=60_000):
        tab.use_local_button.click()
    assert window.session.pair.draft is None and window.session.settings.pair() == (str(mtp), "")
    assert window.session.params.drafter == "auto" and "mtp" in window.session.pair.drafters
    assert window.toolbar.drafter.combo.findText(heading(drafter_label("mtp"))) >= 0
    choose_drafter(window, "mtp")
    assert window.toolbar.pair_label.text() == f"{mtp.name} · speculative, built-in MTP drafter"
    rounds: list[str] = []
    window.session.answer_events.connect(
        lambda answer, events: rounds.extend(e.drafter for e in events if isinstance(e, RoundEvent)))
    send_and_wait(qtbot, window, "abc")
    assert "mtp" in rounds and set(rounds) <= {"mtp", "none"}  # "none": a round the policy ran without drafting


def test_an_eagle3_folder_is_offered_for_its_target_and_refused_for_another_with_the_reason(
    make_window, qtbot, mtp_target, tmp_path: Path
) -> None:
    """Opened from a folder it is kept (it used to be refused as "not a chat model"); for the target its config
    names it is a draft, loaded as the EAGLE-3 drafter; for another target it is listed with why not."""
    from engine.fixtures.tiny_eagle3 import build_eagle3_pair

    target, drafter = (p.resolve() for p in build_eagle3_pair(tmp_path, trained=False))
    other = mtp_target.folder("dense").resolve()
    for model in (target, other):
        remember_model(model)
    window = make_window(pair=None)
    tab = window.picker.on_disk
    tab.add_local(drafter)
    assert str(drafter) in rows(tab)
    tab.targets.setCurrentRow(rows(tab)[str(other)])
    qtbot.waitUntil(lambda: checked(tab), timeout=30_000)
    assert str(drafter) not in drafts_offered(tab)
    [line] = [tab.left_out.item(i).text() for i in range(tab.left_out.count()) if drafter.name in tab.left_out.item(i).text()]
    assert line.startswith(f"{model_label(str(drafter))}: {drafter.name} is an EAGLE-3 drafter for specchat/tiny-eagle3-target "
                           "and cannot draft for tiny-mtp-dense-0: it has 3 layers where the drafter taps layers")
    tab.targets.setCurrentRow(rows(tab)[str(target)])
    qtbot.waitUntil(lambda: checked(tab), timeout=30_000)
    assert tab.drafts.currentData() == str(drafter) and tab.drafts.currentText().startswith("EAGLE-3 drafter: ")
    with qtbot.waitSignal(window.session.pair_loaded, timeout=60_000):
        tab.use_local_button.click()
    assert window.session.pair.drafter == "eagle3"
    choose_drafter(window, "eagle3")
    assert window.toolbar.pair_label.text() == f"tiny-eagle3-target ← drafter {drafter.name} · speculative, EAGLE-3 drafter"


@pytest.mark.parametrize("family", ["DFlash", "DSpark"])
def test_a_block_drafter_folder_is_offered_for_its_target_and_answers_with_its_rounds(
    make_window, qtbot, tiny_dirs, tmp_path: Path, family: str
) -> None:
    """A DFlash or DSpark folder: offered for the target it fits (led by its kind), refused for another with its
    own check's reason, loaded as the pair's drafter, offered by the toolbar's Drafter choice, named by the pair line
    and the stats line, drafting the answer's rounds once chosen, and offered by Compare."""
    from engine.fixtures.tiny_dflash import build_dflash_pair
    from engine.fixtures.tiny_dspark import build_dspark_pair

    build = build_dflash_pair if family == "DFlash" else build_dspark_pair
    target, drafter = (p.resolve() for p in build(tmp_path))
    for model in (target, tiny_dirs[0]):
        remember_model(model)
    window = make_window(pair=None)
    tab = window.picker.on_disk
    tab.add_local(drafter)
    tab.targets.setCurrentRow(rows(tab)[str(tiny_dirs[0].resolve())])
    qtbot.waitUntil(lambda: checked(tab), timeout=30_000)
    assert str(drafter) not in drafts_offered(tab)
    [line] = [tab.left_out.item(i).text() for i in range(tab.left_out.count()) if drafter.name in tab.left_out.item(i).text()]
    assert f"{drafter.name} is a {family} drafter and cannot draft for tiny-target: its vocabulary has 384" in line
    tab.targets.setCurrentRow(rows(tab)[str(target)])
    qtbot.waitUntil(lambda: checked(tab), timeout=30_000)
    assert tab.drafts.currentData() == str(drafter) and tab.drafts.currentText().startswith(f"{family} drafter: ")
    with qtbot.waitSignal(window.session.pair_loaded, timeout=60_000):
        tab.use_local_button.click()
    drafter_kind = family.lower()
    assert window.session.pair.drafter == drafter_kind
    assert_the_toolbar_offers(window, drafter_kind, f"{family} drafter")
    assert window.toolbar.pair_label.text() == f"{target.name} ← drafter {drafter.name} · speculative, {family} drafter"
    rounds: list[str] = []
    window.session.answer_events.connect(
        lambda answer, events: rounds.extend(e.drafter for e in events if isinstance(e, RoundEvent)))
    result = send_and_wait(qtbot, window, "abcabd")
    assert drafter_kind in rounds and set(rounds) <= {drafter_kind, "none"}
    assert f"({family} drafter)" in result.summary()
    assert_compare_offers(window, drafter_kind)


def assert_the_toolbar_offers(window, drafter: str, label: str) -> None:
    """The toolbar's Drafter choice offers the pair's drafter under its registry label, after Automatic (the default,
    never pinned); chosen, the next answer drafts with it."""
    combo = window.toolbar.drafter.combo
    entries = [combo.itemText(i) for i in range(combo.count())]
    assert entries[0] == "Automatic" and label in entries and combo.currentData() == "auto"
    choose_drafter(window, drafter)
    assert window.session.params.drafter == drafter


def assert_compare_offers(window, drafter: str) -> None:
    """Compare offers the drafter on each side and runs it against standard decoding at first."""
    window.compare()
    dialog = window.compare_dialog
    assert all(picker.findData(drafter) >= 0 for picker in dialog.pickers) and dialog.sides == ("standard", drafter)


def test_a_draft_as_costly_as_the_target_is_never_offered_but_listed_with_the_reason(make_window, qtbot, tiny_dirs) -> None:
    """With qwen-coder-0.5b as the target the picker offered and preselected qwen-coder-1.5b as its draft."""
    target, draft = (str(d.resolve()) for d in tiny_dirs)
    for folder in (target, draft):
        remember_model(Path(folder))
    window = make_window(pair=None)
    tab = window.picker.on_disk
    window.picker.refresh()
    tab.targets.setCurrentRow(rows(tab)[draft])
    qtbot.waitUntil(lambda: checked(tab) and "draft" in tab.draft_note.text(), timeout=30_000)
    assert drafts_offered(tab) == [""] and tab.drafts.currentData() == ""
    left_out = [tab.left_out.item(i).text() for i in range(tab.left_out.count())]
    assert any(line.startswith(model_label(target)) and "as costly as the target or more" in line for line in left_out)
    tab.targets.setCurrentRow(rows(tab)[target])
    qtbot.waitUntil(lambda: checked(tab) and "draft" in tab.draft_note.text(), timeout=30_000)
    assert tab.drafts.currentData() == draft  # the smaller one is offered and preselected


def test_checking_the_drafts_says_how_far_it_is(make_window, qtbot, tiny_dirs) -> None:
    """"Checking which drafts fit the target…" stood for 60-90 s with no sign of progress."""
    window = make_window(pair=None)
    tab, notes = window.picker.on_disk, []
    window.session.engine.drafts_check_progress.connect(lambda target, done, total: notes.append((done, total)))
    for folder in tiny_dirs:
        remember_model(folder.resolve())
    window.picker.refresh()
    tab.targets.setCurrentRow(rows(tab)[str(tiny_dirs[0].resolve())])
    qtbot.waitUntil(lambda: checked(tab) and "draft" in tab.draft_note.text(), timeout=30_000)
    assert notes and notes[0][0] == 0 and all(total == notes[0][1] for _, total in notes)
    tab._on_drafts_progress(str(tiny_dirs[0].resolve()), 1, 3)
    assert tab.draft_note.text() == "Checking which drafts fit the target: 1 of 3 checked…"
    tab._on_drafts_progress("another target", 2, 3)  # no longer selected: not said
    assert tab.draft_note.text() == "Checking which drafts fit the target: 1 of 3 checked…"



def test_checking_a_gguf_target_says_it_is_imported_first(make_window, qtbot, tiny_dirs, tmp_path: Path, monkeypatch) -> None:
    """The check imports a GGUF target first (minutes for Gemma), which stood as "0 of 1 checked…" with no word of the
    import: each stage is said under the count, with how far it is."""
    from tests.engine.models.test_gguf_import import TYPES, _write_synthetic

    monkeypatch.setenv("SPECCHAT_CACHE", str(tmp_path / "cache"))
    gguf, _, _ = _write_synthetic(tmp_path, TYPES)
    remember_model(tiny_dirs[1].resolve())
    window = make_window(pair=None)
    tab, notes = window.picker.on_disk, []
    say = tab.draft_note.setText
    monkeypatch.setattr(tab.draft_note, "setText", lambda text: notes.append(text) or say(text))  # every note said
    window.picker.refresh()
    tab.add_local(gguf)
    tab.targets.setCurrentRow(rows(tab)[str(gguf.resolve())])
    qtbot.waitUntil(lambda: checked(tab) and "draft" in tab.draft_note.text(), timeout=60_000)
    count, why = "Checking which drafts fit the target: 0 of 1 checked…\n", " (a GGUF file is imported once, to read its tokenizer)"
    assert f"{count}Reading tiny.gguf{why}" in notes and f"{count}Converting the tokenizer of tiny.gguf{why}" in notes
    assert any(note.startswith(f"{count}Importing tiny.gguf, ") and note.endswith(f"%{why}") for note in notes), notes

def test_a_vision_model_is_marked_as_seeing_images_in_the_picker(make_window, vision_dir: Path, tiny_dirs) -> None:
    from engine.models.vision import SEES_IMAGES

    window = make_window(pair=None)
    tab = window.picker.on_disk
    tab.add_local(vision_dir.resolve())
    tab.add_local(tiny_dirs[0].resolve())
    texts = {name: tab.targets.item(row).text() for name, row in rows(tab).items()}
    assert SEES_IMAGES in texts[str(vision_dir.resolve())]
    assert SEES_IMAGES not in texts[str(tiny_dirs[0].resolve())]
