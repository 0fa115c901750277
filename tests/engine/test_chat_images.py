"""Images kept with a chat: read with Pillow, downscaled past MAX_SIDE, saved as bytes, sent as parts."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from engine.chat_images import MAX_SIDE, ChatImage, ImageError, image_span, is_image_file, message_content, read_chat_image


def image_file(path: Path, size: tuple[int, int], fmt: str, mode: str = "RGB") -> Path:
    Image.new(mode, size, (10, 200, 30, 128)[: len(mode)]).save(path, fmt)
    return path


@pytest.mark.parametrize("fmt, suffix", [("PNG", ".png"), ("JPEG", ".jpg"), ("WEBP", ".webp")])
def test_a_small_png_jpeg_or_webp_is_kept_as_it_came(tmp_path: Path, fmt: str, suffix: str) -> None:
    path = image_file(tmp_path / f"cat{suffix}", (120, 80), fmt)
    image = read_chat_image(path)
    assert (image.name, image.data, image.width, image.height, image.size) == (path.name, path.read_bytes(), 120, 80,
                                                                                path.stat().st_size)


def test_a_large_image_is_downscaled_to_max_side_keeping_its_shape(tmp_path: Path) -> None:
    path = image_file(tmp_path / "big.jpg", (MAX_SIDE * 3, MAX_SIDE * 3 // 2), "JPEG")
    image = read_chat_image(path)
    assert (image.width, image.height) == (MAX_SIDE, MAX_SIDE // 2)
    assert Image.open(io.BytesIO(image.data)).format == "JPEG" and image.size == path.stat().st_size


def test_a_transparent_image_stays_transparent_when_downscaled(tmp_path: Path) -> None:
    path = image_file(tmp_path / "logo.png", (MAX_SIDE + 10, 20), "PNG", mode="RGBA")
    kept = Image.open(io.BytesIO(read_chat_image(path).data))
    assert kept.format == "PNG" and kept.mode == "RGBA" and kept.size[0] == MAX_SIDE


def test_another_format_pillow_reads_is_kept_as_png(tmp_path: Path) -> None:
    path = image_file(tmp_path / "old.bmp", (30, 20), "BMP")
    assert Image.open(io.BytesIO(read_chat_image(path).data)).format == "PNG"


def test_pasted_bytes_are_an_image_too() -> None:
    out = io.BytesIO()
    Image.new("RGB", (5, 7)).save(out, "PNG")
    image = read_chat_image(out.getvalue(), "Pasted image.png")
    assert (image.name, image.width, image.height) == ("Pasted image.png", 5, 7)


@pytest.mark.parametrize("name, data, problem", [
    ("broken.png", b"\x89PNG\r\n\x1a\nnot really", "broken.png cannot be read as an image: attach PNG, JPEG or WebP"),
    ("phone.heic", b"\x00\x00\x00\x18ftypheic", "phone.heic cannot be read as an image: this Pillow has no HEIC reader"),
])
def test_what_pillow_cannot_read_is_refused_naming_the_fix(tmp_path: Path, name: str, data: bytes, problem: str) -> None:
    (tmp_path / name).write_bytes(data)
    with pytest.raises(ImageError, match=problem):
        read_chat_image(tmp_path / name)


def test_a_missing_file_says_so() -> None:
    with pytest.raises(ImageError, match="Cannot read gone.png: .* Check that the file exists"):
        read_chat_image(Path("/no/such/gone.png"))


def test_images_are_told_by_name_or_by_their_first_bytes(tmp_path: Path) -> None:
    png = image_file(tmp_path / "really-a-png.txt", (2, 2), "PNG")
    (tmp_path / "notes.txt").write_text("words")
    assert is_image_file(png) and is_image_file(tmp_path / "x.HEIC") and not is_image_file(tmp_path / "notes.txt")


def test_a_record_round_trips_the_bytes(tmp_path: Path) -> None:
    image = ChatImage("a.png", b"\x89PNG bytes", 3, 4, 99, tokens=12)
    assert ChatImage.from_record(image.record()) == image and image.record()["kind"] == "image"


def test_a_message_with_images_is_parts_before_its_text() -> None:
    images = [ChatImage("a.png", b"A", 1, 1, 1), ChatImage("b.png", b"B", 1, 1, 1)]
    assert message_content("Which?", []) == "Which?"
    assert message_content("Which?", images) == [{"type": "image", "image": b"A"}, {"type": "image", "image": b"B"},
                                                  {"type": "text", "text": "Which?"}]


def test_an_image_span_says_which_and_how_many_tokens() -> None:
    assert image_span(0, 2, 64) == "[image: 1 of 2, 64 tokens]"
    assert image_span(1, 2, 0) == "[image: 2 of 2]"
