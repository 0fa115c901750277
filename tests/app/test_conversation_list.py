"""The sidebar: a search that finds nothing says so, and an export is offered a clean file name (issue 22)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app import file_dialogs
from app.conversation_list import ConversationList, SystemPromptDialog, markdown_file_name
from app.settings import AppSettings
from engine.conversations import ConversationStore


@pytest.fixture
def sidebar(qtbot, tmp_path: Path) -> ConversationList:
    store = ConversationStore(tmp_path / "c.sqlite3")
    store.add_message(store.create("Rust lifetimes"), "user", "Why does the borrow checker complain?")
    widget = ConversationList(store)
    qtbot.addWidget(widget)
    widget.refresh()
    widget.show()  # resizing a hidden widget delivers no resize event
    return widget


def test_a_search_that_finds_nothing_says_so_and_a_match_or_an_empty_box_does_not(sidebar: ConversationList) -> None:
    """The list just went blank, which looks the same as a sidebar that failed to load."""
    assert sidebar.no_match.isHidden()
    sidebar.search.setText("  python ")
    assert sidebar.list.count() == 0 and not sidebar.no_match.isHidden()
    assert sidebar.no_match.text() == "No chats match “python”."
    sidebar.search.setText("borrow")
    assert sidebar.list.count() == 1 and sidebar.no_match.isHidden()
    sidebar.resize(200, 600)
    sidebar.search.setText("supercalifragilistic" * 10)  # one word: it cannot wrap
    assert sidebar.no_match.text().startswith("No chats match “supercalifragilistic") and sidebar.no_match.text().endswith("…”.")
    assert sidebar.no_match.minimumSizeHint().width() <= 200 and not sidebar.no_match.isHidden()
    sidebar.resize(400, 600)
    assert sidebar.no_match.minimumSizeHint().width() > 200  # wider: more of the query is shown
    sidebar.search.clear()
    assert sidebar.list.count() == 1 and sidebar.no_match.isHidden()


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("Why is the sky blue.", "Why is the sky blue.md"),  # was "Why is the sky blue..md"
        ("Why is the sky blue...", "Why is the sky blue.md"),
        ("Why is the sky blue…", "Why is the sky blue.md"),
        ('a/b testing: why? "yes" <no> | *', "a b testing why yes no.md"),  # "/" made a folder of the name
        ("line one\nline two\tend", "line one line two end.md"),
        (".bashrc explained", "bashrc explained.md"),  # a leading dot hides the file
        ("  ...  ", "Conversation.md"),
        (" ".join(["word"] * 30), " ".join(["word"] * 16) + ".md"),  # cut at a word, at most 80 characters
        ("y" * 200, "y" * 80 + ".md"),
    ],
)
def test_an_exports_file_name_is_made_from_the_title_safe_on_every_system(title: str, name: str) -> None:
    assert markdown_file_name(title) == name


def test_export_offers_the_clean_name_in_the_home_folder_and_writes_there(sidebar: ConversationList, monkeypatch,
                                                                           tmp_path: Path, isolated_home: Path) -> None:
    """Then in the folder chosen last: every file dialog opened in the app's working directory."""
    offered: list[str] = []
    target = tmp_path / "chosen.md"

    def save_dialog(_parent, _caption, default, _filter):  # QFileDialog.getSaveFileName
        offered.append(default)
        return str(target), ""

    monkeypatch.setattr(file_dialogs.QFileDialog, "getSaveFileName", save_dialog)
    chat = sidebar.store.create("Why is the sky blue.")
    sidebar.store.add_message(chat, "user", "Why is the sky blue?")
    sidebar.export(chat)
    assert offered == [str(Path.home() / "Why is the sky blue.md")]
    assert target.read_text(encoding="utf-8").startswith("# Why is the sky blue.\n")
    sidebar.export(chat)  # the next one offers the folder chosen last
    assert offered[1] == str(tmp_path / "Why is the sky blue.md")


def test_a_title_with_markup_is_shown_as_typed_in_its_system_prompt_dialog(qtbot) -> None:
    """A chat renamed "Geography <b>&</b> files" showed a bold & in the dialog (the label read it as HTML)."""
    dialog = SystemPromptDialog("Geography <b>&</b> files", "")
    qtbot.addWidget(dialog)
    assert dialog.note.textFormat() == Qt.TextFormat.PlainText and "“Geography <b>&</b> files”" in dialog.note.text()


def test_the_chat_shown_last_is_offered_again_unless_it_was_deleted(qtbot, tmp_path: Path, isolated_home) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    kept, gone = store.create("Kept"), store.create("Gone")
    listed = ConversationList(store, AppSettings())
    qtbot.addWidget(listed)
    listed.refresh(kept)
    assert ConversationList(store, AppSettings()).last_shown() == kept
    listed.refresh(gone)
    store.delete(gone)
    assert ConversationList(store, AppSettings()).last_shown() is None
