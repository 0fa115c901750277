"""What the adaptive policy measured of a model pair, kept across app launches in one small JSON file.

Automatic (`drafting/automatic.py`) chooses among drafters by what it measured of each on this machine; a new launch that
started from nothing would pay for those learning rounds again in every first answer. So after each answer the
policy's estimates (acceptance per drafter, draft costs, verify times) are written to `MEMORY_FILE` in the
app-data folder, keyed by the pair (each model folder's path, size and modification time: a re-download or a
re-quantisation is another pair) and by the settings the estimates depend on (`generation._settings_key`, the
prompt's kind among them), and a new policy for that pair, those settings and that kind starts from them. The file
keeps the KEPT_ENTRIES latest; one it cannot read, or of another VERSION, is started over, never an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ...models.app_paths import data_dir
from ...models.folder_files import folder_files
from .estimates import AcceptanceEstimate, PositionalAcceptance, RecentCost

MEMORY_FILE = "drafter-measurements.json"
VERSION = 2  # 2: estimates kept per kind of prompt (1 kept code's and chat's together, the draft model's apart)
KEPT_ENTRIES = 32
Kept = TypeVar("Kept", bound="Measuring")


def dump(acceptance: dict[str, AcceptanceEstimate], positions: dict[str, PositionalAcceptance],
         draft_cost: dict[str, RecentCost], verify: dict[int, RecentCost], verified: dict[str, int]) -> dict[str, Any]:
    """A policy's estimates as JSON data."""
    return {
        "acceptance": {source: [e.accepted, e.rejected] for source, e in acceptance.items()},
        "positions": {source: [p.accepted, p.rejected] for source, p in positions.items()},
        "draft_cost": {source: list(cost.samples) for source, cost in draft_cost.items()},
        "verify": {str(width): list(cost.samples) for width, cost in verify.items()},
        "verified": dict(verified),
    }


def load(data: dict[str, Any], acceptance: dict[str, AcceptanceEstimate], positions: dict[str, PositionalAcceptance],
         draft_cost: dict[str, RecentCost], verify: dict[int, RecentCost], verified: dict[str, int]) -> None:
    """Fill a policy's estimates from `dump`'s data (raises KeyError, TypeError or ValueError on other data)."""
    for source, (accepted, rejected) in data["acceptance"].items():
        acceptance[source] = AcceptanceEstimate(float(accepted), float(rejected))
    for source, (accepted, rejected) in data["positions"].items():
        positions[source] = PositionalAcceptance([float(a) for a in accepted], [float(r) for r in rejected])
    for source, samples in data["draft_cost"].items():
        draft_cost[source] = _recent(samples)
    for width, samples in data["verify"].items():
        verify[int(width)] = _recent(samples)
    verified.update({source: int(n) for source, n in data["verified"].items()})


class Measuring(Protocol):
    """A policy whose estimates can be kept (`AdaptiveDraftLength`)."""

    def measured(self) -> dict[str, Any]: ...

    def recall(self, measured: dict[str, Any]) -> None: ...


def _recent(samples: list[float]) -> RecentCost:
    cost = RecentCost()
    for seconds in samples:
        cost.add(float(seconds))
    return cost


def pair_identity(folders: list[Path], drafter: str | None) -> str:
    """A pair as its files are now: each model folder's path, size and modification time (target first), and the
    drafter kind loaded as its draft (None: none)."""
    return " + ".join([_folder_identity(folder) for folder in folders] + ([drafter] if drafter else []))


def _folder_identity(folder: Path) -> str:
    """A folder as its path, its files' total size and latest change (s): readable in the file, and changed by a
    re-download or a re-quantisation."""
    try:
        files = folder_files(folder)
    except OSError:
        files = []  # no folder (yet): the path alone
    size, modified = sum(f.size for f in files), max((f.mtime_ns // 10**9 for f in files), default=0)
    return f"{Path(folder).resolve()} ({size} bytes, {modified})"


def _entry(pair: str, settings: tuple) -> str:
    return f"{pair} | {settings!r}"


def _read(path: Path) -> dict[str, Any]:
    """The file's entries, oldest first ({} when it is missing, unreadable or of another version)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), dict):
        return {}
    return data["entries"]


def recall(policy: Kept, pair: str, settings: tuple, folder: Path | None = None) -> Kept:
    """`policy`, started from what an earlier launch measured of `pair` (`pair_identity`) with these settings, if
    anything (`folder`: the app-data folder's stand-in in tests)."""
    measured = _read((folder or data_dir()) / MEMORY_FILE).get(_entry(pair, settings))
    if isinstance(measured, dict):
        try:
            policy.recall(measured)
        except (KeyError, TypeError, ValueError, AttributeError):
            return policy
    return policy


def remember(policy: Measuring, pair: str, settings: tuple, folder: Path | None = None) -> None:
    """Keep what `policy` has measured for the next launch (the latest KEPT_ENTRIES pairs and settings)."""
    path = (folder or data_dir()) / MEMORY_FILE
    entries = _read(path)
    key = _entry(pair, settings)
    entries.pop(key, None)
    entries[key] = policy.measured()
    kept = dict(list(entries.items())[-KEPT_ENTRIES:])
    partial = path.with_suffix(".partial")
    try:
        partial.write_text(json.dumps({"version": VERSION, "entries": kept}), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        return  # a read-only app-data folder: the estimates still live as long as the pair
