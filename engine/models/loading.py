"""Finding a model on disk and loading it with mlx-lm.

A model can be named by a local folder (MLX or Hugging Face safetensors), a `.gguf` file (imported once into a
cache folder) or a Hugging Face repo id (found in the standard HF cache). Every way a name can be wrong gets
its own one-line error that says what to do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_map

from ..arrays import named_arrays
from ..errors import ModelNotFoundError, NotAModelError
from .folder_kind import build_failure, check_model_type, check_not_foreign, folder_name, read_json
from .load_progress import LoadProgress
from .memory import physical_memory_gb
from .vision import Sight, is_vision_config, load_vision

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# The files mlx-lm reads, as mlx-lm's own downloader selects them, and MTPLX's sidecar of a target's MTP head
# (engine/drafters/mtp_loading.py), which mlx-lm's conversions drop.
MODEL_FILE_PATTERNS = ["*.json", "model*.safetensors", "*.py", "tokenizer.model", "*.tiktoken", "*.txt", "*.jinja",
                       "mtp.safetensors", "mtp/*.safetensors"]
# Any of these is a tokenizer transformers can build (a fast one, SentencePiece, byte-level BPE, tiktoken).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "spiece.model", "*.tiktoken")
# On the CPU backend, quantized models are dequantized at load while float32 takes at most this share of RAM: 40%
# leaves as much for a draft and the caches within the 80% the models may use (memory.CPU_SHARE). At a quarter,
# Qwen2.5-Coder-1.5B (7.1 GB in float32) stayed 4-bit on a 24 GB machine, and its first 42-token prefill chunk
# had not finished after 15 minutes on a busy CPU; in float32 the whole prefill took under a minute.
CPU_DEQUANTIZE_SHARE = 0.4



@dataclass
class LoadedModel:
    """A model ready to generate with.

    Attributes:
        name: what the user called it (repo id or path).
        path: the local folder it was loaded from.
        model: the mlx-lm model.
        tokenizer: mlx-lm's TokenizerWrapper.
        config: its config.json.
        sight: what a vision target sees images with (None: the model reads only text).
    """

    name: str
    path: Path
    model: nn.Module
    tokenizer: Any
    config: dict[str, Any] = field(default_factory=dict)
    sight: Sight | None = None  # a vision target's vision tower and processor (engine/models/vision.py)

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
    except Exception:  # noqa: BLE001 - LocalEntryNotFoundError and friends: not (completely) in the cache
        return None
    has_config = (path / "config.json").is_file() or (path / "adapter_config.json").is_file()  # adapters: named as such
    return path if has_config and any(path.glob("*.safetensors")) else None


def check_model_folder(path: Path) -> None:
    """Raise one line unless `path` holds a chat model: config.json, every weights file it names intact, and a
    tokenizer. A drafter, an adapter or an embedding model is named as what it is (engine/models/folder_kind.py);
    a conversion or copy left half-done says what is missing."""
    check_not_foreign(path)
    _check_config_and_weights(path)
    _check_shards(path)
    _check_tokenizer(path)
    _check_weights_intact(path)


def _check_config_and_weights(path: Path) -> None:
    has_config, has_weights = (path / "config.json").is_file(), any(path.glob("*.safetensors"))
    if has_config and not has_weights:
        torch_weights = sorted(f.name for f in path.glob("*.bin")) + sorted(f.name for f in path.glob("*.pt"))
        if torch_weights:
            raise NotAModelError(
                f"{folder_name(path)} holds PyTorch weights ({torch_weights[0]}), which MLX cannot read: convert it "
                f"with `mlx_lm.convert --hf-path {path}` and open the converted folder.",
                "PyTorch weights",
            )
        raise NotAModelError(
            f"{folder_name(path)} is incomplete: it has no *.safetensors weights beside its config.json (a conversion "
            "or copy that did not finish). Convert or copy it again.",
            "incomplete",
        )
    if not has_config:
        missing = " and no *.safetensors weights" if not has_weights else ""
        raise NotAModelError(
            f"{path} is not a model folder: it has no config.json{missing}. "
            "Pick the folder that holds config.json and the .safetensors files, or a .gguf file.",
            "not a model",
        )


def _check_shards(path: Path) -> None:
    """Every file the weights index names must be there (a sharded conversion or copy can stop between files)."""
    index = read_json(path / "model.safetensors.index.json")
    if index is None or not isinstance(index.get("weight_map"), dict):
        return
    named = sorted(set(index["weight_map"].values()))
    missing = [f for f in named if not (path / f).is_file()]
    if missing:
        shown = ", ".join(missing[:2]) + (", ..." if len(missing) > 2 else "")
        raise NotAModelError(
            f"{folder_name(path)} is incomplete: its weights index names {len(named)} files and {len(missing)} of "
            f"them are missing ({shown}). Copy or download the missing files.",
            "incomplete",
        )


def _check_tokenizer(path: Path) -> None:
    if not any(any(path.glob(pattern)) for pattern in TOKENIZER_FILES):
        raise NotAModelError(
            f"{folder_name(path)} has no tokenizer (no tokenizer.json or tokenizer.model): copy the tokenizer files "
            "of the model it was converted from into it.",
            "no tokenizer",
        )


def _check_weights_intact(path: Path) -> None:
    for weights in sorted(path.glob("*.safetensors")):
        problem = safetensors_problem(weights)
        if problem:
            raise NotAModelError(
                f"{folder_name(path)}'s weights are damaged: {weights.name} {problem}. It was probably cut off while "
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


def resolve_model_path(spec: str, progress: LoadProgress | None = None) -> Path:
    """The local folder for a model name (importing a GGUF file on first use)."""
    from .gguf_import import imported_model_path

    path = Path(spec).expanduser()
    if path.is_file():
        if path.suffix.lower() == ".gguf":
            return imported_model_path(path, progress=progress)
        raise NotAModelError(f"{spec} is a file, not a model: pick a model folder or a .gguf file.")
    if path.is_dir():
        check_loadable_folder(path)
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
    check_loadable_folder(local)
    return local


def check_loadable_folder(path: Path) -> None:
    """check_model_folder, then whether mlx-lm has a module for the model type (this imports mlx-lm: call it
    where models load, not on the GUI thread)."""
    check_model_folder(path)
    check_model_type(path, read_config(path))


def read_config(path: Path) -> dict[str, Any]:
    try:
        return json.loads((path / "config.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise NotAModelError(f"{path / 'config.json'} cannot be read ({e}). Re-download or re-convert the model.") from e


def use_float32_on_cpu(model: nn.Module, evaluate: bool = True, progress: Callable[[int, int], None] | None = None) -> None:
    """On MLX's CPU backend compute in float32: its matmul calls BLAS only for float32, and runs half-precision
    and quantized weights through generic kernels (a 4-bit matmul measured 7x slower than bf16 here). So a
    quantized model (an imported GGUF) is dequantized while its float32 copy takes at most
    `CPU_DEQUANTIZE_SHARE` of the memory; a bigger one stays quantized, slow rather than swapping. On a GPU,
    where quantized weights are the fast ones, the weights stay as stored. The weights are then evaluated (read
    from disk, converted) on any device, unless `evaluate=False` leaves them lazy (a pipeline stage reads only its
    own layers); `progress` gets the bytes evaluated so far and in all."""
    if mx.default_device() == mx.cpu:
        if _quantized_layers(model) and float32_bytes(model) <= CPU_DEQUANTIZE_SHARE * physical_memory_gb() * 1e9:
            from mlx_lm.utils import dequantize_model

            dequantize_model(model)
        half = (mx.float16, mx.bfloat16)
        model.update(tree_map(lambda p: p.astype(mx.float32) if p.dtype in half else p, model.parameters()))
    if evaluate:
        _evaluate(model, progress)


def _evaluate(model: nn.Module, progress: Callable[[int, int], None] | None) -> None:
    """Evaluate the parameters array by array, reporting the bytes done: reading and dequantizing a GGUF's
    SmolLM2-135M took 27 of its 38 s of loading on a busy 2-core CPU, all under a bar that could not say how far it
    was. A cancel raised from `progress` is seen between two arrays."""
    arrays = [array for _, array in named_arrays(model.parameters())]
    total, done = sum(array.nbytes for array in arrays), 0
    for array in arrays:
        mx.eval(array)
        done += array.nbytes
        if progress:
            progress(done, total)


def _quantized_layers(model: nn.Module) -> list[nn.Module]:
    return [m for _, m in model.named_modules() if hasattr(m, "bits") and hasattr(m, "scales")]


def float32_bytes(model: nn.Module) -> int:
    """Bytes of the model's parameters in float32, counting a quantized weight by the values it packs."""
    packed = {id(m.weight): 32 / m.bits for m in _quantized_layers(model)}
    scales = {id(a) for m in _quantized_layers(model) for a in (m.scales, getattr(m, "biases", None)) if a is not None}
    total = 0
    for _, array in named_arrays(model.parameters()):
        if id(array) not in scales:
            total += int(array.size * packed.get(id(array), 1)) * 4
    return total


def build_model(spec: str, path: Path, lazy: bool = False) -> tuple[nn.Module, dict[str, Any]]:
    """mlx-lm's model and config from a resolved folder, every way that can fail as one line; `lazy`: weights
    are read when first evaluated."""
    from mlx_lm.utils import load_model as mlx_load_model

    config = read_config(path)
    try:
        return mlx_load_model(path, lazy=lazy)
    except FileNotFoundError as e:
        raise NotAModelError(f"{spec} is incomplete: {e}. Re-download it.") from e
    except RuntimeError as e:  # MLX's loader on a file the header check could not catch
        raise unreadable_weights(spec, e) from e
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:  # mlx-lm building what it cannot
        raise build_failure(path, config, e) from e


def unreadable_weights(spec: str, error: RuntimeError) -> NotAModelError:
    """MLX failing to read a weights file (cut short, damaged), in one line with the fix."""
    return NotAModelError(f"{spec}'s weights could not be read ({error}). Download or copy the model again.")


def load_model(spec: str, progress: LoadProgress | None = None) -> LoadedModel:
    """Load a model by name (folder, .gguf file or downloaded repo id) with mlx-lm's loader, or mlx-vlm's for a
    model with a vision tower."""
    from mlx_lm.utils import load_tokenizer

    path = resolve_model_path(spec, progress=progress)
    report = progress or (lambda stage, done, total: None)
    name = Path(spec).name
    report(f"Loading {name}", 0, 0)
    config = read_config(path)
    sight = None
    model: nn.Module
    if is_vision_config(config):  # mlx-vlm builds it; the loop reads its language model
        model, sight = load_vision(spec, path)
    else:
        model, config = build_model(spec, path, lazy=True)  # read below, with the bar
    try:
        use_float32_on_cpu(sight.model if sight else model, progress=lambda done, total: report(f"Loading {name}", done, total))
    except RuntimeError as e:  # the weights are read here: a file cut short inside its data fails now
        raise unreadable_weights(spec, e) from e
    report(f"Loading the tokenizer of {name}", 0, 0)  # seconds for a large vocabulary: not under a full bar
    tokenizer = load_tokenizer(path, eos_token_ids=config.get("eos_token_id"))
    return LoadedModel(name=spec, path=path, model=model, tokenizer=tokenizer, config=config, sight=sight)
