"""A one-line label cut with "…" to its width, whole on hover."""

from __future__ import annotations

from app.elided_label import ElidedLabel

TEXT = "Qwen3-4B-Instruct-2507-MLX-4bit ← draft Qwen3-0.6B-MLX-4bit · speculative, draft model"


def test_a_narrow_label_shows_the_start_of_its_text_and_the_whole_on_hover(qtbot) -> None:
    label = ElidedLabel(TEXT)
    qtbot.addWidget(label)
    label.resize(label.sizeHint())
    assert label.elided() == TEXT and label.toolTip() == TEXT
    label.resize(label.minimumSizeHint())
    assert label.elided().endswith("…") and TEXT.startswith(label.elided()[:-1])
    assert label.minimumSizeHint().width() < label.sizeHint().width()  # a toolbar can keep it in view, cut
