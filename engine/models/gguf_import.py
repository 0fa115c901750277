"""Import a GGUF file (llama.cpp's format) as an MLX model folder.

Users have GGUF collections, and a GGUF is the one real model a package registry carries for our tests. We read
its header (`gguf_header.py`), map llama.cpp's names and metadata back to what mlx-lm loads
(`gguf_architectures.py`), write the weights tensor by tensor, still quantized at the source's precision, into
safetensors shards in bounded memory (`gguf_weights.py`, `gguf_tensors.py`), and rebuild the tokenizer from the
file's metadata with its chat template. The folder is an ordinary mlx-lm conversion: `mlx_lm.load` opens it.

A `.gguf` path is accepted wherever a model path is: `imported_model_path` converts it once into a cache folder
keyed by the file's content, and later loads reuse that folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..errors import NotAModelError
from .gguf_architectures import architecture, model_config
from .gguf_header import read_header
from .gguf_rope import llama3_rope_scaling
from .gguf_tensors import ShardWriter, TensorFile
from .gguf_weights import quantization_config, write_weights
from .load_progress import LoadProgress

# Part of an imported folder's name: raised when the importer writes folders differently, so that a GGUF
# imported by an older version is imported again (2: kept quantized, sharded; 1: bf16).
IMPORT_FORMAT = 2


def default_cache_dir() -> Path:
    """Where imported models live: $SPECCHAT_CACHE or ~/.cache/specchat, under gguf/."""
    root = os.environ.get("SPECCHAT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "specchat")
    return Path(root) / "gguf"


def file_fingerprint(path: Path) -> str:
    """A short content key: the size and hashes of the first and last MiB (hashing 10 GB would take minutes)."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        digest.update(f.read(1 << 20))
        if size > 2 << 20:
            f.seek(-(1 << 20), os.SEEK_END)
            digest.update(f.read(1 << 20))
    return digest.hexdigest()[:16]


def imported_model_path(
    gguf_path: str | os.PathLike[str],
    cache_dir: Path | None = None,
    progress: LoadProgress | None = None,
) -> Path:
    """The MLX folder for a GGUF file, importing it on first use (each stage reported to `progress`)."""
    source = Path(gguf_path).expanduser().resolve()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", source.stem)
    key = f"{stem}-{file_fingerprint(source)}"
    out = (cache_dir or default_cache_dir()) / f"{key}-v{IMPORT_FORMAT}"
    if not (out / "config.json").exists():
        import_gguf(source, out, progress=progress)
        _remove_older_imports(out.parent, key)
    return out


def _remove_older_imports(cache: Path, key: str) -> None:
    """Delete this file's folders written by older importers (a 7B's bf16 import is ~15 GB of disk)."""
    for folder in cache.glob(f"{key}*"):
        if folder.name != f"{key}-v{IMPORT_FORMAT}" and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)


def import_gguf(
    gguf_path: str | os.PathLike[str], out_dir: str | os.PathLike[str], progress: LoadProgress | None = None
) -> Path:
    """Convert a GGUF file into an MLX model folder at `out_dir` and return it.

    The folder is written under a temporary name and renamed when complete, so an interrupted import never
    leaves a folder that a later load would trip on. Each stage is reported as it starts, and the last once it
    is done, before the rename: a `progress` that raises to cancel ends the import in any of them, keeping nothing.
    """
    source = Path(gguf_path)
    out = Path(out_dir)
    report = progress or (lambda stage, done, total: None)
    report(f"Reading {source.name}", 0, 0)
    try:
        header = read_header(source)
    except (ValueError, OSError) as e:
        raise NotAModelError(f"{source} is not a readable GGUF file ({e}). Re-download it or pick another file.") from e
    metadata = header.metadata
    arch = metadata.get("general.architecture")
    architecture(arch, source.name)
    assert isinstance(arch, str)  # architecture() refused anything but the name of a supported architecture
    tensors = {t.name: t for t in header.tensors}
    config = model_config(metadata, tensors, arch)
    config.update(_rope_factors(source, tensors, config))

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        def weights(done: int, total: int) -> None:
            report(f"Importing {source.name}", done, total)

        writer = ShardWriter(staging)
        quantization = quantization_config(write_weights(header.tensors, source, config, arch, writer, weights))
        report(f"Saving the weights of {source.name}", 0, 0)  # the last shard: seconds at 100% otherwise
        writer.finish()
        if quantization:
            config["quantization"] = config["quantization_config"] = quantization
        (staging / "config.json").write_text(json.dumps(config, indent=2))
        converting = f"Converting the tokenizer of {source.name}"
        report(converting, 0, 0)
        _write_tokenizer(metadata, arch, staging)
        report(converting, 1, 1)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _rope_factors(source: Path, tensors: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """Rotary scaling llama.cpp stores as tensors (`gguf_rope.py`): Llama 3's frequency factors, Phi-3's long and
    short factors; mlx-lm reads both from config.json's `rope_scaling`."""
    with TensorFile(source) as file:
        if "rope_freqs.weight" in tensors:
            dims = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
            factors = file.read(tensors["rope_freqs.weight"])
            return {"rope_scaling": llama3_rope_scaling(factors, dims, config["rope_theta"])}
        if "rope_factors_long.weight" in tensors:
            stored = {kind: file.read(tensors[f"rope_factors_{kind}.weight"]).tolist() for kind in ("long", "short")}
            return {"rope_scaling": {"type": "longrope", "long_factor": stored["long"], "short_factor": stored["short"]}}
    return {}


def _write_tokenizer(metadata: dict[str, Any], arch: str, out: Path) -> None:
    """Rebuild the tokenizer from the GGUF vocabulary with transformers' GGUF builder and save it.

    transformers' builder knows each vocabulary family's pre-tokenizer and decoder; only its file reader needs
    torch, so we hand it the metadata the `gguf` package read.
    """
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        GGUF_TOKENIZER_MAPPING,
        add_gguf_special_tokens,
        select_tokenizer_builder,
        set_split_regex,
    )

    tokenizer_dict = {
        name: metadata[f"tokenizer.{key}"]
        for key, name in GGUF_TOKENIZER_MAPPING["tokenizer"].items()
        if f"tokenizer.{key}" in metadata
    }
    if "tokens" not in tokenizer_dict:
        raise NotAModelError("The GGUF file carries no vocabulary (tokenizer.ggml.tokens). Pick a complete model file.")
    tokenizer = select_tokenizer_builder(arch, tokenizer_dict.get("tokenizer_type"))(tokenizer_dict)
    tokenizer = add_gguf_special_tokens(tokenizer, tokenizer_dict)
    tokenizer = set_split_regex(tokenizer, tokenizer_dict)

    tokens = tokenizer_dict["tokens"]
    for role in ("bos", "eos", "unk", "pad"):
        key = "unknown_token_id" if role == "unk" else ("padding_token_id" if role == "pad" else f"{role}_token_id")
        token_id = metadata.get(f"tokenizer.ggml.{key}")
        if token_id is not None and 0 <= int(token_id) < len(tokens):
            setattr(tokenizer, f"{role}_token", tokens[int(token_id)])
    add_bos = metadata.get("tokenizer.ggml.add_bos_token")
    if add_bos is None:
        add_bos = tokenizer_dict.get("tokenizer_type") == "llama"
    if hasattr(tokenizer, "add_bos_token"):
        tokenizer.add_bos_token = bool(add_bos)
    template = metadata.get("tokenizer.chat_template")
    if template:
        tokenizer.chat_template = template
    tokenizer.save_pretrained(str(out))
