"""Finished answers as Markdown, with code blocks framed, highlighted and each with a Copy link.

Qt renders Markdown itself (`QTextCursor.insertMarkdown`) but shows code as plain monospace. Fenced code blocks
are cut out and rendered by Pygments (its inline-styled HTML, light or dark to match the window) inside a framed
table, under a header with the language and a `copy:N` link that the view answers by copying block N.

A model's line breaks are kept: CommonMark joins lines that are not apart by a blank one into one paragraph (a soft
break), which ran a poem's lines, or a list item's continued lines, together the moment the answer finished,
while streaming had shown each on its own. Every such break becomes a hard one before Qt reads the Markdown, and an
indented line in a paragraph (code written without a fence) keeps its indentation.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound
from PySide6.QtGui import QFont, QTextBlockFormat, QTextCharFormat, QTextCursor, QTextDocument, QTextFormat

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+#.-]*)[^\n]*\n(?P<code>.*?)(?:^(?P=indent)(?P=fence)[ \t]*$|\Z)", re.M | re.S)
COPY_SCHEME = "copy"
LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")  # what opens the prose after a fence (the closing fence's line end)
LIST_ITEM = re.compile(r"\s*(?:[-*+]|\d+[.)])\s")
STRUCTURED = re.compile(r"\s*(?:[-*+>|]|\d+[.)])(?:\s|$)")  # a line that opens a list item, a quote or a table row
INDENT = re.compile(r"[ \t]+(?=\S)")  # a line's indentation
SOFT_BREAK = re.compile(r"(?<=\S)[ \t]*\n(?=[ \t]*\S)")  # a line's end, with more text on the next line


@dataclass(frozen=True)
class CodeBlock:
    language: str
    code: str


def split_code_blocks(text: str) -> list[str | CodeBlock]:
    """The text as prose pieces and fenced code blocks, in order (an unclosed fence runs to the end)."""
    parts: list[str | CodeBlock] = []
    position = 0
    for match in FENCE.finditer(text):
        if match.start() > position:
            parts.append(text[position : match.start()])
        parts.append(CodeBlock(match.group("lang"), match.group("code").rstrip("\n")))
        position = match.end()
    if position < len(text):
        parts.append(text[position:])
    return parts


def keep_indentation(prose: str) -> str:
    """Markdown prose whose indented lines keep their indentation where it is the text's, not Markdown's: code a model
    wrote without a fence ("def f(x):" then "    return x") became flat lines, since a paragraph's continuation
    lines lose their leading spaces. Lines in a list, a quote or a table, from its first line to the next blank one,
    keep Markdown's reading (their indentation is the list's)."""
    lines = prose.split("\n")
    structured = False
    for index, line in enumerate(lines):
        if not line.strip():
            structured = False
        elif STRUCTURED.match(line):
            structured = True
        elif index and lines[index - 1].strip() and not structured and (indent := INDENT.match(line)):
            lines[index] = "\u00a0" * len(indent.group(0).expandtabs(4)) + line[indent.end():]
    return "\n".join(lines)


def keep_line_breaks(prose: str) -> str:
    """Markdown prose whose every line break is kept as the model wrote it: a hard break (two spaces before it), and
    in a list item a line separator, since Qt's reader made a hard break in an item an item of its own, bulleted."""
    lines = prose.split("\n")
    kept = lines[:1]
    in_item = bool(LIST_ITEM.match(lines[0]))
    for line in lines[1:]:
        if in_item and line.strip() and kept[-1].strip() and not LIST_ITEM.match(line):
            kept[-1] += "\u2028" + line.strip()  # the item's next line, in its block
            continue
        in_item = bool(LIST_ITEM.match(line)) or (in_item and bool(line.strip()))
        kept.append(line)
    return SOFT_BREAK.sub("  \n", "\n".join(kept))


def code_html(block: CodeBlock, index: int, dark: bool) -> str:
    """A code block as a framed table: a header with its language and a Copy link, then the highlighted code."""
    try:
        lexer = get_lexer_by_name(block.language) if block.language else TextLexer()
    except ClassNotFound:
        lexer = TextLexer()
    style = "monokai" if dark else "friendly"
    body = highlight(block.code, lexer, HtmlFormatter(noclasses=True, nowrap=True, style=style))
    frame, header, background = ("#555", "#2b2b2b", "#272822") if dark else ("#c8c8c8", "#ececec", "#f8f8f8")
    language = html.escape(block.language or "code")
    return (
        f'<table width="100%" cellspacing="0" cellpadding="6" style="border: 1px solid {frame}; margin: 6px 0;">'
        f'<tr><td style="background: {header};"><span style="font-size: small;">{language}</span>'
        f'&nbsp;&nbsp;<a href="{COPY_SCHEME}:{index}">Copy</a></td></tr>'
        f'<tr><td style="background: {background};"><pre style="margin: 0; white-space: pre-wrap;">{body}</pre></td></tr></table>'
    )


# Qt's relative font sizes (1.5x and 1.2x the text's for 2 and 1); deeper headings are bold at the text's size
HEADING_SIZE_STEPS = {1: 2, 2: 1}


def tone_down_headings(document: QTextDocument) -> None:
    """Headings at a chat's scale: Qt draws a level-1 heading at twice the text's size (step 3), and a model's
    unfenced code comment ("# Example usage:") became the biggest line of its answer."""
    block = document.begin()
    while block.isValid():
        if level := block.blockFormat().headingLevel():
            heading = QTextCharFormat()
            heading.setProperty(QTextFormat.Property.FontSizeAdjustment, HEADING_SIZE_STEPS.get(level, 0))
            heading.setFontWeight(QFont.Weight.Bold)
            cursor = QTextCursor(block)
            cursor.select(QTextCursor.SelectionType.BlockUnderCursor)
            cursor.mergeCharFormat(heading)
        block = block.next()


def render(document: QTextDocument, text: str, dark: bool) -> list[CodeBlock]:
    """Fill `document` with `text` as Markdown; returns the code blocks, which `copy:N` links refer to.

    Each part is followed by one plain block, a blank line (a fresh format: one that took the part's own would
    continue a list that ends it, as an empty bullet). A code block's table brings its own; another after it, and
    the blank lines that open the prose after a fence, left three blank lines under every code block."""
    document.clear()
    cursor = QTextCursor(document)
    blocks: list[CodeBlock] = []
    for part in split_code_blocks(text):
        if isinstance(part, CodeBlock):
            cursor.insertHtml(code_html(part, len(blocks), dark))
            cursor.setBlockFormat(QTextBlockFormat())
            cursor.setCharFormat(QTextCharFormat())
            blocks.append(part)
        elif part.strip():
            cursor.insertMarkdown(keep_indentation(keep_line_breaks(LEADING_BLANK_LINES.sub("", part))))
            cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
    tone_down_headings(document)
    code_spans_at_text_size(document)
    return blocks


def code_spans_at_text_size(document: QTextDocument) -> None:
    """Qt's Markdown reader gives `code` the system's monospace font at that font's own size, which a larger chat
    text (`text_size.py`) left small; without a size of its own a span follows the text's, as the code blocks do."""
    block = document.begin()
    while block.isValid():
        iterator = block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            if fragment.charFormat().fontFixedPitch() and fragment.charFormat().hasProperty(QTextFormat.Property.FontPointSize):
                cursor = QTextCursor(document)
                cursor.setPosition(fragment.position())
                cursor.setPosition(fragment.position() + fragment.length(), QTextCursor.MoveMode.KeepAnchor)
                unsized = fragment.charFormat()
                unsized.clearProperty(QTextFormat.Property.FontPointSize)
                cursor.setCharFormat(unsized)
            iterator += 1
        block = block.next()
