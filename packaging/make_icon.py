"""Draw SpecChat's icon with Qt and write resources/SpecChat.png and resources/SpecChat.icns.

Run once when the design changes (`python packaging/make_icon.py`); both files are committed. The .icns holds
PNG-encoded entries (supported since macOS 10.7), so no Apple tool is needed to make it.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPainterPath

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
# ICNS entry type for each PNG size (ic07..ic10).
ICNS_TYPES = {128: b"ic07", 256: b"ic08", 512: b"ic09", 1024: b"ic10"}


def draw(size: int) -> QImage:
    """A rounded square with three token chips in the speculation colours and a chat tail."""
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = size / 1024
    background = QPainterPath()
    background.addRoundedRect(QRectF(80 * s, 80 * s, 864 * s, 864 * s), 190 * s, 190 * s)
    p.fillPath(background, QColor("#1f2937"))
    bubble = QPainterPath()
    bubble.addRoundedRect(QRectF(190 * s, 250 * s, 644 * s, 430 * s), 90 * s, 90 * s)
    bubble.moveTo(300 * s, 660 * s)
    bubble.lineTo(260 * s, 800 * s)
    bubble.lineTo(420 * s, 670 * s)
    p.fillPath(bubble, QColor("#f9fafb"))
    for index, colour in enumerate(("#54A24B", "#54A24B", "#F58518", "#4C78A8")):
        chip = QPainterPath()
        chip.addRoundedRect(QRectF((250 + index * 140) * s, 420 * s, 112 * s, 92 * s), 22 * s, 22 * s)
        p.fillPath(chip, QColor(colour))
    p.setPen(QColor("#1f2937"))
    font = QFont("DejaVu Sans", max(int(70 * s), 1), QFont.Weight.Bold)
    p.setFont(font)
    p.drawText(QRectF(190 * s, 290 * s, 644 * s, 110 * s), Qt.AlignmentFlag.AlignCenter, "SpecChat")
    p.end()
    return image


def png_bytes(image: QImage) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data)


def icns(entries: dict[bytes, bytes]) -> bytes:
    body = b"".join(kind + struct.pack(">I", len(png) + 8) + png for kind, png in entries.items())
    return b"icns" + struct.pack(">I", len(body) + 8) + body


def main() -> int:
    app = QGuiApplication(sys.argv[:1])  # noqa: F841 - fonts need an application
    (RESOURCES / "SpecChat.png").write_bytes(png_bytes(draw(512)))
    (RESOURCES / "SpecChat.icns").write_bytes(icns({kind: png_bytes(draw(size)) for size, kind in ICNS_TYPES.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
