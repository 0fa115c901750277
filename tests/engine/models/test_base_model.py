"""Telling a base model (no chat template) from its files: folders and GGUF files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from engine.models.base_model import is_base_model
from engine.models.model_store import remember_model, remembered_models


def test_a_folder_without_a_chat_template_is_a_base_model(tiny_dirs, tmp_path: Path, isolated_home: Path) -> None:
    chat = shutil.copytree(tiny_dirs[0], tmp_path / "chat")
    assert not is_base_model(chat)
    base = shutil.copytree(tiny_dirs[0], tmp_path / "base")
    for name in ("chat_template.jinja", "chat_template.json"):
        (base / name).unlink(missing_ok=True)
    config = json.loads((base / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (base / "tokenizer_config.json").write_text(json.dumps(config))
    assert is_base_model(base)
    remember_model(base)
    assert [m.base_model for m in remembered_models()] == [True]


def test_a_gguf_file_is_a_base_model_when_its_metadata_has_no_chat_template(tmp_path: Path) -> None:
    import gguf
    import numpy as np

    def write(path: Path, template: str | None) -> Path:
        writer = gguf.GGUFWriter(str(path), "llama")
        if template:
            writer.add_chat_template(template)
        writer.add_tensor("token_embd.weight", np.zeros((4, 32), dtype=np.float32))
        writer.write_header_to_file(); writer.write_kv_data_to_file(); writer.write_tensors_to_file(); writer.close()
        return path

    assert is_base_model(write(tmp_path / "base.gguf", None))
    assert not is_base_model(write(tmp_path / "chat.gguf", "{{ messages }}"))
