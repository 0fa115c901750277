"""Images read from a path, bytes or a data URL; what cannot be read is named."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from engine.errors import InvalidParameterError
from engine.images import fingerprint, read_image


def test_a_path_bytes_and_a_data_url_read_as_the_same_image(vision_images: list[Path]) -> None:
    data = vision_images[0].read_bytes()
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    images = [read_image(vision_images[0]), read_image(data), read_image(url)]
    assert {fingerprint([image]) for image in images} == {fingerprint([images[0]])}
    assert images[0].mode == "RGB" and images[0].size == (100, 80)


def test_two_images_have_two_fingerprints(vision_images: list[Path]) -> None:
    assert fingerprint([read_image(vision_images[0])]) != fingerprint([read_image(vision_images[1])])


@pytest.mark.parametrize("source, message", [
    ("/no/such/cat.png", "Cannot read the image /no/such/cat.png"),
    ("data:image/png,rawtext", "must be base64"),
    (b"plain text", "The image is not an image Pillow can read"),
])
def test_what_cannot_be_read_is_named(source: object, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        read_image(source)
