"""What SpecChat remembers across launches: generation settings, the chosen pair and the drafter chosen for each
pair, view options.

Stored with QSettings in an INI file in the app-data folder (so tests can point $SPECCHAT_HOME elsewhere).
"""

from __future__ import annotations

import json

from PySide6.QtCore import QByteArray, QSettings

from engine.drafter_kinds import choices, drafter_label
from engine.models.app_paths import data_dir
from engine.params import GenerationParams

# The generation settings the user can change, with their types (QSettings returns strings from INI files).
SAVED_PARAMS = {
    "num_draft": int,
    "adaptive": bool,
    "max_draft": int,
    "mode": str,
    "temperature": float,
    "top_p": float,
    "top_k": int,
    "min_p": float,
    "max_tokens": int,
    "repetition_penalty": float,
    "kv_bits": lambda raw: int(raw) or None,  # saved as 0 for full precision
    "lenience": float,
    "ssd": bool,
    "fanout": int,
    "history": bool,
    "think": bool,  # the default of each chat's Think switch
}
# The drafter chosen for each pair (the toolbar's Drafter choice), by "target\ndraft", as JSON: a pair never pinned
# drafts with Automatic. The drafter saved once for every pair ("generation/drafter") is no longer read.
PINNED_DRAFTERS = "pair/drafters"
AUTOMATIC = "auto"  # the drafter of a pair never pinned
# The draft an older SpecChat saved for "the target's own MTP heads": they load with the target, nothing beside it.
OLD_MTP_DRAFT = "built-in:mtp"


def _as_bool(value: object) -> bool:
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")


def _count(value: object) -> int | None:
    """A saved whole number of 0 or more (the INI file gives it back as a string); None for anything else."""
    return int(value) if isinstance(value, (int, str)) and str(value).isdigit() else None


def _pair_key(target: str, draft: str | None) -> str:
    return f"{target}\n{draft or ''}"


class AppSettings:
    """Typed access to the saved settings.

    Attributes:
        store: the underlying QSettings (INI file in the app-data folder).
    """

    def __init__(self) -> None:
        self.store = QSettings(str(data_dir() / "settings.ini"), QSettings.Format.IniFormat)

    def params(self) -> GenerationParams:
        """The saved generation settings (defaults where nothing valid is saved)."""
        defaults = GenerationParams.preset("default")
        values = {}
        for name, kind in SAVED_PARAMS.items():
            raw = self.store.value(f"generation/{name}")
            if raw is None:
                continue
            try:
                values[name] = _as_bool(raw) if kind is bool else kind(raw)  # type: ignore[operator]  # kinds are int, float, str
            except (TypeError, ValueError):
                continue
        try:
            return defaults.replace(**values)
        except Exception:  # noqa: BLE001 - a hand-edited or stale file must not stop the app
            return defaults

    def save_params(self, params: GenerationParams) -> None:
        for name in SAVED_PARAMS:
            value = getattr(params, name)
            self.store.setValue(f"generation/{name}", 0 if value is None else value)
        self.store.sync()

    def system_prompt(self) -> str:
        return str(self.store.value("generation/system_prompt", ""))

    def save_system_prompt(self, text: str) -> None:
        self.store.setValue("generation/system_prompt", text)
        self.store.sync()

    def pair(self) -> tuple[str, str] | None:
        """The last loaded (target, draft); draft is "" for none."""
        target = self.store.value("pair/target")
        if not target:
            return None
        draft = str(self.store.value("pair/draft", "") or "")
        return str(target), "" if draft == OLD_MTP_DRAFT else draft

    def save_pair(self, target: str, draft: str | None) -> None:
        self.store.setValue("pair/target", target)
        self.store.setValue("pair/draft", draft or "")
        self.store.sync()

    def pinned_drafter(self, target: str, draft: str | None) -> str:
        """The drafter chosen for the pair (`drafter_kinds` name); "auto" for a pair never pinned."""
        return self._pins().get(_pair_key(target, draft), AUTOMATIC)

    def save_pinned_drafter(self, target: str, draft: str | None, drafter: str) -> None:
        """Remember the drafter chosen for the pair; Automatic, the default, is remembered by forgetting the pin."""
        pins = self._pins()
        pins.pop(_pair_key(target, draft), None)
        if drafter != AUTOMATIC:
            pins[_pair_key(target, draft)] = drafter
        self.store.setValue(PINNED_DRAFTERS, json.dumps(pins))
        self.store.sync()

    def restored_drafter(self, target: str, draft: str | None, drafters: tuple[str, ...]) -> tuple[str, str]:
        """The drafter a pair just loaded drafts with (`drafters`: the single ones it has): the one pinned for it, or
        Automatic; and, when its pin was set aside (and forgotten) because the pair cannot run it (a drafter folder
        changed on disk, a hand-edited file), the line that says so ("" otherwise)."""
        pinned = self.pinned_drafter(target, draft)
        if pinned in choices(drafters):
            return pinned, ""
        self.save_pinned_drafter(target, draft, AUTOMATIC)
        return AUTOMATIC, f"This pair cannot run the {drafter_label(pinned)} chosen for it before: drafting with Automatic."

    def _pins(self) -> dict[str, str]:
        try:
            pins = json.loads(str(self.store.value(PINNED_DRAFTERS, "{}")))
        except ValueError:
            return {}  # a hand-edited file: every pair on Automatic
        return {str(k): str(v) for k, v in pins.items()} if isinstance(pins, dict) else {}

    def show_markdown(self) -> bool:
        return _as_bool(self.store.value("view/markdown", True))

    def save_show_markdown(self, on: bool) -> None:
        self.store.setValue("view/markdown", on)
        self.store.sync()

    def show_rejected(self) -> bool:
        """Whether answers show their rejected draft tokens as ghost text."""
        return _as_bool(self.store.value("view/rejected", True))

    def save_show_rejected(self, on: bool) -> None:
        self.store.setValue("view/rejected", on)
        self.store.sync()

    def cluster_hosts(self) -> str:
        """The mlx.launch hostfile the target runs across ("": this Mac alone)."""
        return "" if _as_bool(self.store.value("cluster/off", False)) else self.cluster_hostfile()

    def cluster_hostfile(self) -> str:
        """The hostfile last chosen, kept while running across Macs is off (a failed load switches it off: the
        user fixes the network and switches it on again, without looking for the file)."""
        return str(self.store.value("cluster/hosts", "") or "")

    def save_cluster_hosts(self, path: str) -> None:
        """Run the target across the Macs of `path` from now on; "": switch that off, keeping the hostfile."""
        if path:
            self.store.setValue("cluster/hosts", path)
        self.store.setValue("cluster/off", not path)
        self.store.sync()

    def text_size_step(self, default: int) -> int:
        """The chat's text size (`text_size.SCALES`' index; `default` where none is saved or it is no number)."""
        raw = self.store.value("view/text_size", default)
        try:
            return int(raw) if isinstance(raw, (int, str)) else default  # the INI file gives back a string
        except ValueError:
            return default

    def save_text_size_step(self, step: int) -> None:
        self.store.setValue("view/text_size", step)
        self.store.sync()

    def last_chat(self) -> int | None:
        """The chat shown when the window last closed (None: a new chat was)."""
        return _count(self.store.value("view/last_chat", ""))

    def save_last_chat(self, conversation_id: int | None) -> None:
        self.store.setValue("view/last_chat", "" if conversation_id is None else conversation_id)
        self.store.sync()

    def server_port(self, default: int) -> int:
        """The port the Local server last served on (`default` before it ever did)."""
        port = _count(self.store.value("server/port", default))
        return default if port is None else port

    def save_server_port(self, port: int) -> None:
        self.store.setValue("server/port", port)
        self.store.sync()

    def window_layout(self) -> tuple[QByteArray | None, QByteArray | None]:
        """The window's saved geometry and its columns' saved widths (`window_layout`; None: never saved)."""
        geometry, columns = self.store.value("window/geometry"), self.store.value("window/columns")
        return (geometry if isinstance(geometry, QByteArray) else None, columns if isinstance(columns, QByteArray) else None)

    def save_window_layout(self, geometry: QByteArray, columns: QByteArray) -> None:
        self.store.setValue("window/geometry", geometry)
        self.store.setValue("window/columns", columns)
        self.store.sync()

    def mcp(self) -> tuple[str, bool]:
        """The mcp.json chosen ("": the app-data folder's) and whether the chat offers its servers' tools."""
        return str(self.store.value("mcp/path", "") or ""), _as_bool(self.store.value("mcp/on", True))

    def save_mcp(self, path: str, on: bool) -> None:
        self.store.setValue("mcp/path", path)
        self.store.setValue("mcp/on", on)
        self.store.sync()
