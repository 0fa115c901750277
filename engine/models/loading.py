"""Finding a model on disk and loading it with mlx-lm.

A model can be named by a local folder (MLX or Hugging Face safetensors), a `.gguf` file (imported once into a
cache folder) or a Hugging Face repo id (found in the standard HF cache). Every way a name can be wrong gets
its own one-line error that says what to do.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_map

from ..errors import ModelNotFoundError, NotAModelError, UnsupportedModelError

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# The files mlx-lm reads, as mlx-lm's own downloader selects them.
MODEL_FILE_PATTERNS = ["*.json", "model*.safetensors", "*.py", "tokenizer.model", "*.tiktoken", "*.txt", "*.jinja"]

ProgressCallback = Callable[[int, int], None]


@dataclass
class LoadedModel:
    """A model ready to generate with.

    Attributes:
        name: what the user called it (repo id or path).
        path: the local folder it was loaded from.
        model: the mlx-lm model.
        tokenizer: mlx-lm's TokenizerWrapper.
        config: its config.json.
    """

    name: str
    path: Path
    model: nn.Module
    tokenizer: Any
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def context_length(self) -> int:
        """The longest context the model was trained for (what the config says, 4096 if it says nothing)."""
        for key in ("max_position_embeddings", "max_sequence_length", "n_positions", "seq_length"):
            value = self.config.get(key) or self.config.get("text_config", {}).get(key)
            if value:
                return int(value)
        return 4096

    @property
    def display_name(self) -> str:
        return self.name.rstrip("/").split("/")[-1] if "/" in self.name else self.name


def looks_like_path(spec: str) -> bool:
    """Whether a model name is meant as a filesystem path rather than a hub repo id."""
    return spec.startswith(("/", ".", "~")) or "\\" in spec or spec.endswith(".gguf") or spec.count("/") > 1


def cached_repo_path(repo_id: str) -> Path | None:
    """The local snapshot of a hub repo in the HF cache, or None if it is not fully downloaded."""
    from huggingface_hub import snapshot_download

    from .app_paths import hub_cache_dir

    try:
        path = Path(
            snapshot_download(
                repo_id, local_files_only=True, allow_patterns=MODEL_FILE_PATTERNS, cache_dir=str(hub_cache_dir())
            )
        )
    except Exception:  # LocalEntryNotFoundError and friends: not (completely) in the cache
        return None
    return path if (path / "config.json").is_file() and any(path.glob("*.safetensors")) else None


def check_model_folder(path: Path) -> None:
    """Raise NotAModelError unless `path` holds a config.json and complete safetensors weights."""
    missing = []
    if not (path / "config.json").is_file():
        missing.append("config.json")
    if not any(path.glob("*.safetensors")):
        missing.append("*.safetensors weights")
    if missing:
        raise NotAModelError(
            f"{path} is not a model folder: it has no {' and no '.join(missing)}. "
            "Pick the folder that holds config.json and the .safetensors files, or a .gguf file."
        )
    for weights in sorted(path.glob("*.safetensors")):
        problem = safetensors_problem(weights)
        if problem:
            raise NotAModelError(
                f"{path.name}'s weights are damaged: {weights.name} {problem}. It was probably cut off while "
                "downloading or copying: download or copy it again (or delete it from the model list)."
            )


def safetensors_problem(path: Path) -> str | None:
    """What is wrong with a safetensors file, from its header alone (no weights are read), or None.

    The header is an 8-byte length and a JSON table of tensors with their byte ranges; a file cut short holds
    fewer bytes than the table's last range ends at.
    """
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            length = int.from_bytes(f.read(8), "little")
            if size < 8 or length <= 0 or 8 + length > size:
                return f"has {size} bytes, too few for its own header"
            table = json.loads(f.read(length))
    except (OSError, ValueError) as e:
        return f"cannot be read ({e})"
    end = max((entry["data_offsets"][1] for name, entry in table.items() if name != "__metadata__"), default=0)
    held = size - 8 - length
    if held < end:
        return f"holds {_megabytes(held)} of its {_megabytes(end)}"
    return None


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


GGUF_MAGIC = b"GGUF"


def check_model_path(path: Path) -> None:
    """Raise NotAModelError unless `path` is a complete model folder or a GGUF file (checked cheaply: headers)."""
    if path.is_dir():
        check_model_folder(path)
    elif path.suffix.lower() == ".gguf":
        try:
            with open(path, "rb") as f:
                magic = f.read(4)
        except OSError as e:
            raise NotAModelError(f"{path} cannot be read ({e.strerror}). Check the file's permissions.") from e
        if magic != GGUF_MAGIC:
            raise NotAModelError(f"{path.name} is not a GGUF file (it does not start as one). Pick a .gguf model file.")
    else:
        raise NotAModelError(f"{path} is not a model: pick a model folder or a .gguf file.")


def resolve_model_path(spec: str, progress: ProgressCallback | None = None) -> Path:
    """The local folder for a model name (importing a GGUF file on first use)."""
    from .gguf_import import imported_model_path

    path = Path(spec).expanduser()
    if path.is_file():
        if path.suffix.lower() == ".gguf":
            return imported_model_path(path, progress=progress)
        raise NotAModelError(f"{spec} is a file, not a model: pick a model folder or a .gguf file.")
    if path.is_dir():
        check_model_folder(path)
        return path
    if looks_like_path(spec) or not REPO_ID.match(spec):
        raise ModelNotFoundError(
            f"No model at {spec}: the path does not exist. Check the path, or name a Hugging Face repo "
            "like mlx-community/Qwen2.5-0.5B-Instruct-4bit."
        )
    local = cached_repo_path(spec)
    if local is None:
        raise ModelNotFoundError(
            f"{spec} is not downloaded. Download it first: `specchat-cli download {spec}` or the app's model picker."
        )
    check_model_folder(local)
    return local


def read_config(path: Path) -> dict[str, Any]:
    try:
        return json.loads((path / "config.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise NotAModelError(f"{path / 'config.json'} cannot be read ({e}). Re-download or re-convert the model.") from e


def use_float32_on_cpu(model: nn.Module) -> None:
    """On MLX's CPU backend compute in float32: its matmul calls BLAS only for float32, and runs half-precision
    through a slower generic kernel. On a GPU the weights stay as stored."""
    if mx.default_device() != mx.cpu:
        return
    half = (mx.float16, mx.bfloat16)
    model.update(tree_map(lambda p: p.astype(mx.float32) if p.dtype in half else p, model.parameters()))
    mx.eval(model.parameters())


def load_model(spec: str, progress: ProgressCallback | None = None) -> LoadedModel:
    """Load a model by name (folder, .gguf file or downloaded repo id) with mlx-lm's loader."""
    from mlx_lm.utils import load_model as mlx_load_model
    from mlx_lm.utils import load_tokenizer

    path = resolve_model_path(spec, progress=progress)
    config = read_config(path)
    try:
        model, config = mlx_load_model(path)
    except ValueError as e:
        if "not supported" in str(e):
            raise UnsupportedModelError(
                f"{spec} is a {config.get('model_type', 'unknown')!r} model, which this mlx-lm cannot run. "
                "Pick another model, or update mlx-lm."
            ) from e
        raise NotAModelError(f"{spec} could not be loaded: {e}") from e
    except FileNotFoundError as e:
        raise NotAModelError(f"{spec} is incomplete: {e}. Re-download it.") from e
    except RuntimeError as e:  # MLX's loader on a file the header check could not catch
        raise NotAModelError(f"{spec}'s weights could not be read ({e}). Download or copy the model again.") from e
    use_float32_on_cpu(model)
    tokenizer = load_tokenizer(path, eos_token_ids=config.get("eos_token_id"))
    return LoadedModel(name=spec, path=path, model=model, tokenizer=tokenizer, config=config)
