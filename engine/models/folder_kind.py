"""What a model folder holds when it is not a chat model: told from its files, before mlx-lm builds anything.

People keep drafter repos, LoRA adapters, vision and embedding models next to their chat models. mlx-lm builds
whatever config.json names and fails deep inside (a ModelArgs missing `tie_word_embeddings` for a DFlash
drafter), so each kind gets its own line here: what the folder is, and what to pick instead. `foreign_kind`
reads JSON files only and imports no MLX, because the picker lists folders on the GUI thread; the checks that
ask mlx-lm (`check_model_type`, `build_failure`) run where models load.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..drafter_kinds import FolderMarks, folder_kinds
from ..errors import NotAChatModelError, UnsupportedModelError

SENTENCE_TRANSFORMERS_FILES = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json")
# Encoder-only model types: they read text into vectors or labels and cannot continue it.
ENCODER_MODEL_TYPES = {
    "albert", "bert", "camembert", "deberta", "deberta-v2", "distilbert", "electra", "mpnet", "modernbert",
    "nomic_bert", "roberta", "xlm-roberta",
}
VISION_CONFIG_KEYS = ("vision_config", "vision_tower", "mm_vision_tower", "image_token_index", "image_token_id")
PICK_DRAFT = "with a small chat model of its family or lookup as the draft"


@dataclass(frozen=True)
class FolderKind:
    """A folder that holds something other than a chat model.

    Attributes:
        kind: what it is in a few words ("DFlash drafter"), for lists of models.
        message: one line: what it is and what to pick instead.
    """

    kind: str
    message: str

    def error(self) -> NotAChatModelError:
        return NotAChatModelError(self.message, self.kind)


def folder_name(path: Path) -> str:
    """How to name a folder to its owner: a Hugging Face cache snapshot by its repo id, not its commit hash."""
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
        return path.parent.parent.name.removeprefix("models--").replace("--", "/")
    return path.name


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from a file, or None when the file is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def architectures(config: dict[str, Any]) -> list[str]:
    names = config.get("architectures") or []
    return [names] if isinstance(names, str) else [str(n) for n in names]


def foreign_kind(path: Path) -> FolderKind | None:
    """The kind of a drafter, adapter or embedding-model folder; None for anything else (chat models and broken
    folders alike: loading.check_model_folder judges those)."""
    config = read_json(path / "config.json")
    detectors: tuple[Callable[[Path, dict[str, Any] | None], FolderKind | None], ...] = (
        _adapter, _drafter, _embedding_model
    )
    for detect in detectors:
        kind = detect(path, config)
        if kind is not None:
            return kind
    return None


def check_not_foreign(path: Path) -> None:
    """Raise NotAChatModelError when the folder holds a drafter, an adapter or an embedding model."""
    kind = foreign_kind(path)
    if kind is not None:
        raise kind.error()


# --- adapters -----------------------------------------------------------------------------------------------


def _adapter(path: Path, config: dict[str, Any] | None) -> FolderKind | None:
    """A LoRA (or other) adapter: adapter_config.json and adapter weights, no model weights of its own."""
    adapter = read_json(path / "adapter_config.json")
    if adapter is None or any("adapter" not in f.name for f in path.glob("*.safetensors")):
        return None
    peft = "peft_type" in adapter
    method = str(adapter.get("peft_type") or adapter.get("fine_tune_type") or "lora")
    kind = {"lora": "LoRA", "dora": "DoRA"}.get(method.lower(), method) + " adapter"
    base = adapter.get("base_model_name_or_path") if peft else adapter.get("model")
    name = folder_name(path)
    pick = f"pick its base model, {base}, instead" if base else "pick the model it was trained from instead"
    if peft:
        use = ("merge it into the base with PEFT's merge_and_unload, convert the result with mlx_lm.convert and open "
               "the converted folder")
    else:
        use = f"fuse it first (mlx_lm.fuse --model {base or 'BASE'} --adapter-path {path}) and open the fused folder"
    return FolderKind(
        kind,
        f"{name} is a {kind}{f' for {base}' if base else ''}, not a model: {pick}. SpecChat does not apply "
        f"adapters; to chat with the fine-tuned model, {use}.",
    )


# --- speculative drafters -----------------------------------------------------------------------------------


def _drafter(path: Path, config: dict[str, Any] | None) -> FolderKind | None:
    """A draft head that reads its target's hidden states (DFlash, EAGLE, Medusa, MTP): it cannot run alone."""
    family = drafter_family(config) if config is not None else None
    if config is None or family is None:
        return None
    article = "an" if family.startswith(("EAGLE", "MTP")) else "a"
    origin = " (z-lab)" if family == "DFlash" else ""
    draftable = any(row.family == family for row in folder_kinds())  # SpecChat drafts with it given as the draft
    pick = ("and this folder as its draft." if draftable  # words the picker and the CLI share: no flag
            else f"{PICK_DRAFT}; SpecChat cannot draft with {family} drafters yet.")
    return FolderKind(
        f"{family} drafter",
        f"{folder_name(path)} is {article} {family} drafter{origin}, not a chat model: it drafts from its target "
        f"model's hidden states and cannot answer on its own. Pick {_drafter_target(config)} as the target, {pick}",
    )


def drafter_family(config: dict[str, Any]) -> str | None:
    """The drafter family a config.json is from ("DFlash", "EAGLE-3", "MTP", ...), None for any other model: the one
    rule that says what a folder is, for the picker, pairing, `ModelPair.load`, the CLI and the server alike.

    A config says what it is in three ways, read from the most to the least specific: a nested tag that exists only
    to name a kind (SpecForge's `dflash_config.projector_type: dspark`), the class it builds (`architectures`,
    `speculators_model_type`), and keys that only one kind's configs carry. The class outranks a key because a key
    can be left over from a conversion while the class is what the publisher's code builds; so:
    - `Eagle3Speculator` with a `dflash_config` is EAGLE-3: speculators builds an EAGLE-3 network from it;
    - `DFlash3DraftModel` is a DFlash drafter (of a version SpecChat cannot run: its loader says so in one line),
      never a chat model mlx-lm would fail to build;
    - only `draft_vocab_size` is EAGLE-3: a draft vocabulary is EAGLE-3's mark (its d2t/t2d maps), no chat model
      has one, and EAGLE-3's loader names what such a folder lacks.
    Families SpecChat does not draft with (EAGLE, Medusa, other speculators, MTP checkpoints) are named so the
    picker can say what the folder is.
    """
    kinds = folder_kinds()
    for named in (FolderMarks.tagged_by, FolderMarks.named_by):
        found = next((row.family for row in kinds if named(row.folder, config)), None)  # type: ignore[arg-type]
        if found:
            return found
    other = _other_family(config)
    return other or next((row.family for row in kinds if row.folder.keyed_by(config)), None)  # type: ignore[union-attr]


def drafter_kind(config: dict[str, Any] | None) -> str | None:
    """The registry's name of the drafter a config.json is ("eagle3", "dflash"...); None for any other folder
    (a model, or a drafter family SpecChat does not draft with)."""
    family = drafter_family(config) if config else None
    return next((row.name for row in folder_kinds() if family and row.family == family), None)


def _other_family(config: dict[str, Any]) -> str | None:
    """A drafter family SpecChat does not draft with, named by the config's class."""
    archs = " ".join(architectures(config)).lower()
    speculator = str(config.get("speculators_model_type") or "").lower()
    if "eagle" in archs or speculator == "eagle":
        return "EAGLE"
    if "medusa" in archs or "medusa_num_heads" in config:
        return "Medusa"
    if speculator or "speculators_config" in config or "speculator" in archs:
        return speculator or "speculators"
    if str(config.get("model_type", "")).endswith("_mtp"):
        return "MTP"
    return None


def _drafter_target(config: dict[str, Any]) -> str:
    """The target a drafter was trained for, when its config names it (the speculators format does)."""
    verifier = (config.get("speculators_config") or {}).get("verifier") or {}
    name = verifier.get("name_or_path") if isinstance(verifier, dict) else None
    return str(name) if name else "its target model"


# --- embedding and encoder models ---------------------------------------------------------------------------


def _embedding_model(path: Path, config: dict[str, Any] | None) -> FolderKind | None:
    """A sentence-transformers model (even one built on a decoder, like Qwen3-Embedding) or a BERT-like encoder."""
    name = folder_name(path)
    if any((path / f).is_file() for f in SENTENCE_TRANSFORMERS_FILES):
        return FolderKind(
            "embedding model",
            f"{name} is an embedding model (sentence-transformers), not a chat model: it turns text into vectors "
            "and cannot write answers. Pick a chat (Instruct) model; embedding models run in sentence-transformers "
            "or mlx-embeddings.",
        )
    model_type = str((config or {}).get("model_type", ""))
    if model_type in ENCODER_MODEL_TYPES:
        arch = ", ".join(architectures(config or {})) or model_type
        return FolderKind(
            "encoder model",
            f"{name} is a {model_type} encoder ({arch}), not a chat model: it reads text into vectors or labels "
            "and cannot write answers. Pick a chat (Instruct) model.",
        )
    return None


# --- what mlx-lm makes of the config (run where models load: imports mlx-lm) --------------------------------


def is_vision_model(path: Path, config: dict[str, Any]) -> bool:
    """Whether a folder holds a vision-language model: a vision tower in the config or an image processor."""
    if any(key in config for key in VISION_CONFIG_KEYS):
        return True
    processor = read_json(path / "preprocessor_config.json") or read_json(path / "processor_config.json") or {}
    return any("image" in str(key).lower() for key in processor)


def _vision_kind(path: Path, config: dict[str, Any]) -> FolderKind:
    model_type = config.get("model_type", "unknown")
    return FolderKind(
        "vision model",
        f"{folder_name(path)} is a vision-language model ({model_type}) that neither mlx-lm nor mlx-vlm can load: "
        "update mlx-vlm, or pick another model.",
    )


def check_model_type(path: Path, config: dict[str, Any]) -> None:
    """Raise one line unless mlx-lm has a module for the config's model_type (a vision model it lacks one for
    is named as such)."""
    from mlx_lm.utils import _get_classes

    name = folder_name(path)
    if "model_type" not in config:
        raise NotAChatModelError(
            f"{name}'s config.json names no model_type, so mlx-lm cannot tell what to build: it is not a "
            "Hugging Face transformers model folder. Pick a chat model's folder.",
            "not a model",
        )
    if isinstance(config.get("vision_config"), dict) and config["vision_config"] and _vlm_builds(config):
        return  # mlx-vlm loads it (engine/models/vision.py)
    try:
        _get_classes(config)
    except ValueError as e:
        if is_vision_model(path, config):
            raise _vision_kind(path, config).error() from e
        raise UnsupportedModelError(
            f"{name} is a {config['model_type']!r} model, which this mlx-lm cannot run. Pick another model, or "
            "update mlx-lm."
        ) from e


def _vlm_builds(config: dict[str, Any]) -> bool:
    """Whether mlx-vlm has a module for the config's model type."""
    from mlx_vlm.utils import get_model_and_args

    try:
        get_model_and_args(dict(config))
    except (ValueError, ImportError, KeyError):
        return False
    return True


def build_failure(path: Path, config: dict[str, Any], error: BaseException) -> NotAChatModelError:
    """The one line for a folder mlx-lm failed to build (a TypeError, ValueError or KeyError from deep inside it),
    naming the model type and architecture; the last resort after every check above passed."""
    if is_vision_model(path, config):
        return _vision_kind(path, config).error()
    detail = " ".join(str(error).split())
    detail = (detail[:117] + "...") if len(detail) > 120 else detail
    arch = ", ".join(architectures(config)) or "no architecture named"
    return NotAChatModelError(
        f"{folder_name(path)} is not a chat model mlx-lm can load: building its {config.get('model_type', 'unknown')!r} "
        f"model ({arch}) failed ({type(error).__name__}: {detail}). Pick a chat model's folder.",
        "not a chat model",
    )
