"""Where SpecChat keeps its own files (remembered models, conversations): the platform's app-data folder.

macOS: ~/Library/Application Support/SpecChat; Linux: $XDG_DATA_HOME/SpecChat (~/.local/share/SpecChat);
Windows: %APPDATA%/SpecChat. $SPECCHAT_HOME overrides all of them (tests point it at a temporary folder).
Models themselves live in the Hugging Face cache, shared with mlx-lm and other tools.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_NAME = "SpecChat"
# The bundled data files (catalog, prompts, corpus, icons): a package beside `engine/` in the source tree and the bundle.
RESOURCES = Path(__file__).resolve().parents[2] / "resources"


def data_dir() -> Path:
    """The app-data folder, created on first use."""
    override = os.environ.get("SPECCHAT_HOME")
    if override:
        path = Path(override)
    elif sys.platform == "darwin":
        path = Path.home() / "Library" / "Application Support" / APP_NAME
    elif sys.platform == "win32":
        path = Path(os.environ.get("APPDATA", Path.home())) / APP_NAME
    else:
        path = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / APP_NAME
    path.mkdir(parents=True, exist_ok=True)
    return path


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, read from the environment now (not when huggingface_hub was imported)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    return Path(home) / "hub"


def hub_endpoint() -> str:
    """The hub's address ($HF_ENDPOINT, read now), so a test can point downloads at a loopback server."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def offline() -> bool:
    """Whether the user asked to work offline ($HF_HUB_OFFLINE), read now."""
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
