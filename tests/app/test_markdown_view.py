"""Finished answers as Markdown: code blocks framed, highlighted, each with a Copy link that copies it."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication, QTextFormat

from app.markdown_view import CodeBlock, code_html, split_code_blocks
from app.token_view import TokenTextView

ANSWER = """Here is the function:

```python
def reverse(s):
    return s[::-1]
```

And in a shell:

~~~sh
echo hi
~~~

Done."""


def test_fenced_blocks_are_cut_out_of_the_prose_in_order() -> None:
    parts = split_code_blocks(ANSWER)
    assert parts[0] == "Here is the function:\n\n" and parts[-1].strip() == "Done."
    assert [p for p in parts if isinstance(p, CodeBlock)] == [
        CodeBlock("python", "def reverse(s):\n    return s[::-1]"),
        CodeBlock("sh", "echo hi"),
    ]
    unclosed = split_code_blocks("Text\n```js\nlet x = 1;\n")  # an answer stopped mid-block
    assert unclosed == ["Text\n", CodeBlock("js", "let x = 1;")]


def test_code_is_highlighted_in_a_frame_with_a_copy_link() -> None:
    html = code_html(CodeBlock("python", "def f():\n    return 1"), 0, dark=False)
    assert 'href="copy:0"' in html and "border: 1px solid" in html and "python" in html
    assert "<span style=" in html and "def" in html  # Pygments' inline colours
    assert code_html(CodeBlock("no-such-language", "x"), 1, dark=True).count('href="copy:1"') == 1


def test_the_copy_link_copies_its_block(qtbot) -> None:
    view = TokenTextView()
    qtbot.addWidget(view)
    view.show_markdown(ANSWER)
    text = view.toPlainText()
    assert "def reverse(s):" in text and "echo hi" in text and "```" not in text
    view._open_link(QUrl("copy:1"))
    assert QGuiApplication.clipboard().text() == "echo hi"
    view._open_link(QUrl("copy:0"))
    assert QGuiApplication.clipboard().text() == "def reverse(s):\n    return s[::-1]"


def test_long_code_lines_wrap_inside_their_frame(qtbot) -> None:
    """A code line wider than the answer ran past its right edge, clipped, with no scroll bar to reach it."""
    view = TokenTextView()
    qtbot.addWidget(view)
    view.resize(300, 100)
    view.show()
    qtbot.waitUntil(lambda: view.viewport().width() > 0)
    line = "total = " + " + ".join(f"value_{i}" for i in range(30))
    view.show_markdown(f"A long line:\n\n```python\n{line}\nprint(total)\n```\n")
    assert view.document().size().width() <= view.viewport().width()
    block = view.document().find(line[:20]).block()
    assert block.text() == line and block.layout().lineCount() > 1
    assert view.code_blocks[0].code == f"{line}\nprint(total)"  # Copy still copies the line whole


def test_the_model_s_line_breaks_are_kept_in_a_poem_and_a_list(qtbot) -> None:
    """CommonMark's soft breaks joined a poem's lines into one paragraph the moment the answer finished."""
    view = TokenTextView()
    qtbot.addWidget(view)
    view.show_markdown("The sea\nis wide and grey,\nthe gulls cry.\n\n- salt\n  and spray\n- *wind*\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    lines = view.toPlainText().split("\n")
    assert lines[:6] == ["The sea", "is wide and grey,", "the gulls cry.", "salt", "and spray", "wind"]
    assert "|" not in view.toPlainText()  # a table is still a table


def test_an_answer_ending_in_a_list_has_no_empty_item_after_it(qtbot) -> None:
    """The block that separates one part from the next took the list's format: every answer ending in a list
    showed a last, empty bullet."""
    view = TokenTextView()
    qtbot.addWidget(view)
    view.show_markdown("Steps:\n\n- one\n- two")
    items, block = [], view.document().begin()
    while block.isValid():
        if block.textList() is not None:
            items.append(block.text())
        block = block.next()
    assert items == ["one", "two"]


def test_headings_are_at_a_chat_s_scale(qtbot) -> None:
    """A model's unfenced "# Example usage:" was drawn at about twice the text's size, the biggest line of its answer."""
    view = TokenTextView()
    qtbot.addWidget(view)
    view.show_markdown("# Example usage:\n\nCall it.\n\n### Notes\n\nDone.")
    view.document().setTextWidth(500)  # laid out, as shown
    heights, block = {}, view.document().begin()
    while block.isValid():
        if block.text():
            heights[block.text()] = view.document().documentLayout().blockBoundingRect(block).height()
        block = block.next()
    body = heights["Call it."]
    assert body == heights["Notes"] < heights["Example usage:"] <= 1.6 * body  # Qt's own level 1 was twice the text


def _blocks(view: TokenTextView) -> list[str]:
    texts, block = [], view.document().begin()
    while block.isValid():
        texts.append(block.text())
        block = block.next()
    return texts


def test_a_code_block_has_one_blank_line_under_it_as_over_it(qtbot) -> None:
    """Three blank lines stood under every code block followed by prose: the table's own block, the separator, and
    the blank line that opens the prose after the closing fence."""
    view = TokenTextView()
    qtbot.addWidget(view)
    view.show_markdown("Intro.\n\n```python\nx = 1\n```\n\n- item one\n- item two")
    texts = _blocks(view)
    assert texts[texts.index("Intro.") + 1] == "" and texts[texts.index("Intro.") + 2].startswith("python")
    assert texts[texts.index("x = 1") + 1 :][:2] == ["", "item one"]


def test_a_code_span_follows_the_text_s_size(qtbot) -> None:
    """Qt's Markdown reader sized `code` at the monospace font's own size: a larger chat text left it small."""
    view = TokenTextView()
    qtbot.addWidget(view)
    view.show_markdown("Call `reverse(s)` here.")
    fragments, iterator = [], view.document().begin().begin()
    while not iterator.atEnd():
        fragments.append(iterator.fragment())
        iterator += 1
    code = next(f for f in fragments if f.text() == "reverse(s)")
    assert code.charFormat().fontFixedPitch()  # still monospace
    assert not code.charFormat().hasProperty(QTextFormat.Property.FontPointSize)


def test_code_written_without_a_fence_keeps_its_indentation_and_a_list_its_reading(qtbot) -> None:
    """A model's unfenced "def f(x):" with its indented body rendered as flat lines (the Markdown view only); an
    item's second line was drawn as an item of its own, with a bullet."""
    view = TokenTextView()
    qtbot.addWidget(view)
    view.show_markdown("Here is code:\ndef f(x):\n    if x:\n        return x + 1\n\n- item\n  continued\n- two\n\n"
                       "Steps:\n- check\n  the remainder\n- return")
    lines = view.toPlainText().replace("\u00a0", " ").split("\n")
    assert lines[:4] == ["Here is code:", "def f(x):", "    if x:", "        return x + 1"]
    assert lines[4:11] == ["item", "continued", "two", "Steps:", "check", "the remainder", "return"]  # a list's own
    items, block = [], view.document().begin()
    while block.isValid():
        items += [block.text()] if block.textList() is not None else []
        block = block.next()
    assert items == ["item\u2028continued", "two", "check\u2028the remainder", "return"]  # each item's lines in its block
