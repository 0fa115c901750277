"""Finished answers as Markdown: code blocks framed, highlighted, each with a Copy link that copies it."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication

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
