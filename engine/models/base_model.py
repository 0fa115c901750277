"""Whether a model on disk is a base model (no chat template), judged from its files without loading it.

A base model continues text; it has no chat template, so chats reach it as a plain transcript (see
decoding/prompt_ids.py). The picker says so before the user loads one and wonders why it keeps writing "User:" lines.
"""

from __future__ import annotations

import json
import mmap
from pathlib import Path

BASE_MODEL_NOTE = "base model: continues text, no chat template"
# A GGUF's chat template is a metadata key, near the file's start (before the tensors): searched for in at most
# this many bytes, so that a listing of many large files stays quick.
GGUF_HEADER_SCAN_BYTES = 64 << 20
_GGUF_TEMPLATE_KEY = b"tokenizer.chat_template"


def is_base_model(path: Path) -> bool:
    """Whether the folder or GGUF file has no chat template (False when that cannot be told)."""
    try:
        if path.is_file():
            return not _gguf_has_template(path)
        return not _folder_has_template(path)
    except (OSError, ValueError):
        return False


def _folder_has_template(folder: Path) -> bool:
    if (folder / "chat_template.jinja").exists() or (folder / "chat_template.json").exists():
        return True
    config = folder / "tokenizer_config.json"
    if not config.exists():
        return True  # not a complete model folder: other checks say what is wrong with it
    return bool(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))


def _gguf_has_template(path: Path) -> bool:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return data.find(_GGUF_TEMPLATE_KEY, 0, GGUF_HEADER_SCAN_BYTES) >= 0
