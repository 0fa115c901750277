"""Attachments: files read to text, refused with the reason and the fix, fitted to the context, put into the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.attachments import (
    Attachment,
    AttachmentError,
    AttachmentTooLarge,
    check_fits,
    read_attachment,
    room,
    truncated,
    with_attachments,
)


def count_words(text: str) -> int:
    """A stand-in tokenizer: one token per word."""
    return len(text.split())


def write_pdf(path: Path, lines: list[str]) -> Path:
    """A one-page PDF showing `lines` in Helvetica, written by hand (objects, cross-reference table, trailer)."""
    shown = " ".join(f"({line}) Tj 0 -16 Td" for line in lines)
    stream = f"BT /F1 12 Tf 72 720 Td {shown} ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


@pytest.mark.parametrize("name, content", [
    ("notes.txt", "Plain notes\nover two lines\n"),
    ("app.py", "def add(a, b):\n    return a + b\n"),
    ("README.md", "# Title\n\nSome *Markdown*.\n"),
    ("table.csv", "name,size\nalpha,1\nbeta,2\n"),
    ("data.json", '{"key": [1, 2, 3]}\n'),
])
def test_text_code_markdown_csv_and_json_are_read_whole(tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    attachment = read_attachment(path, count_words)
    assert (attachment.name, attachment.text, attachment.size) == (name, content, len(content.encode()))
    assert attachment.tokens == count_words(attachment.block())


def test_a_pdf_is_read_to_its_text(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "report.pdf", ["Quarterly report", "Revenue grew by 12 percent"])
    attachment = read_attachment(pdf, count_words)
    assert "Quarterly report" in attachment.text and "Revenue grew by 12 percent" in attachment.text
    assert attachment.size == pdf.stat().st_size


def test_a_pdf_without_text_is_refused_as_a_scan(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "scan.pdf", [])
    with pytest.raises(AttachmentError, match=r"scan.pdf has no text to read .* \(OCR\)"):
        read_attachment(pdf)


def test_a_damaged_pdf_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\nnot really a PDF at all")
    with pytest.raises(AttachmentError, match="broken.pdf cannot be read as a PDF .* export it again"):
        read_attachment(path)


@pytest.mark.parametrize("name, data, problem", [
    ("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"photo.png is an image, and files are read as text: give it as an image \(--image\)"),
    ("scan.dat", b"\xff\xd8\xff\xe0\x00\x10JFIF", "scan.dat is an image"),
    ("model.bin", b"\x01\x02\x00\x03", r"model.bin is not a text file \(it holds binary data\): attach text"),
    ("latin1.txt", "café".encode("latin-1"), r"latin1.txt is not UTF-8 text .*: save it as UTF-8"),
    ("empty.txt", b"  \n", "empty.txt is empty"),
])
def test_files_that_are_not_text_are_refused_naming_the_problem_and_the_fix(tmp_path: Path, name: str, data: bytes,
                                                                             problem: str) -> None:
    (tmp_path / name).write_bytes(data)
    with pytest.raises(AttachmentError, match=problem):
        read_attachment(tmp_path / name)


def test_a_missing_file_or_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AttachmentError, match="Cannot read gone.txt: No such file or directory. Check that the file exists"):
        read_attachment(tmp_path / "gone.txt")
    with pytest.raises(AttachmentError, match="is a folder, not a file"):
        read_attachment(tmp_path)


def test_the_block_names_the_file_and_fences_it_beyond_any_fence_inside() -> None:
    block = Attachment("guide.md", "Run:\n```bash\nmake\n```\n", 20).block()
    assert block.startswith("guide.md\n````md\n") and block.endswith("\n````")
    assert Attachment("notes.txt", "hi", 2).block() == "notes.txt\n```\nhi\n```"


def test_the_files_come_before_the_question_in_the_message() -> None:
    files = [Attachment("a.py", "x = 1", 5), Attachment("b.csv", "k,v", 3)]
    assert with_attachments("Rename x to y.", files) == "a.py\n```py\nx = 1\n```\n\nb.csv\n```csv\nk,v\n```\n\nRename x to y."
    assert with_attachments("Just a question", []) == "Just a question"


def test_an_oversized_file_is_refused_with_its_tokens_and_the_models_limit() -> None:
    assert room(context_length=1024, max_tokens=200) == 1024 - 200 - 64
    assert room(context_length=1024, max_tokens=4096) == 1024 - 512 - 64  # the answer keeps at most half the context
    big = Attachment("big.py", "x " * 2000, 4000, tokens=2003)
    with pytest.raises(AttachmentTooLarge, match=r"^big.py is 2,003 tokens, but Tiny reads at most 1,024: with 264 kept "
                                                 r"for the question and the answer there is room for 760.$") as refused:
        check_fits(big, [], 1024, 200, "Tiny")
    assert (refused.value.attachment, refused.value.room) == (big, 760)
    other = Attachment("small.py", "y", 1, tokens=700)
    with pytest.raises(AttachmentTooLarge, match="answer, beside the 700 tokens already attached, there is room for 60"):
        check_fits(Attachment("c.py", "z", 1, tokens=61), [other], 1024, 200, "Tiny")
    check_fits(Attachment("c.py", "z", 1, tokens=60), [other], 1024, 200, "Tiny")  # fits exactly: no error


def test_truncated_cuts_at_a_line_to_fit_and_says_so() -> None:
    text = "".join(f"line {i} of the file\n" for i in range(100))
    whole = read_like(text)
    cut = truncated(whole, 100, count_words)
    assert cut.tokens <= 100 and cut.cut_from == whole.tokens
    kept = cut.text.split("\n[")[0].splitlines()
    assert kept == text.splitlines()[: len(kept)] and len(kept) > 10
    assert cut.text.endswith(f"[… cut to fit the model's context: {len(kept)} of 100 lines]")
    assert count_words(truncated(whole, 100, count_words).block()) <= 100
    assert "(cut from" in cut.label()


def test_not_even_one_line_fitting_is_refused() -> None:
    with pytest.raises(AttachmentError, match="Not even the first line of f.txt fits in 3 tokens"):
        truncated(read_like("one two three four five\n"), 3, count_words)


def test_an_attachment_survives_its_record() -> None:
    attachment = Attachment("a.py", "x = 1", 5, tokens=7, cut_from=9)
    assert Attachment.from_record(attachment.record()) == attachment
    assert attachment.label() == "a.py · 5 B · 7 tokens (cut from 9)"


def read_like(text: str) -> Attachment:
    """An attachment of `text` with its words counted, as `read_attachment` would make it."""
    return Attachment("f.txt", text, len(text), tokens=count_words(Attachment("f.txt", text, 0).block()))
