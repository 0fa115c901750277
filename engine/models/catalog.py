"""The recommended draft/target pairs, read from `resources/pairs.json` (the one place to edit them)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from ..drafter_kinds import kind
from .app_paths import RESOURCES
from .draft_choice import pair_drafters
from .memory import Fit, check_fit

CATALOG_PATH = RESOURCES / "pairs.json"


@dataclass(frozen=True)
class RecommendedPair:
    """One catalog entry.

    Attributes:
        id: a short stable name ("qwen2.5-0.5b-7b").
        use_case: what it is good for.
        draft, target: Hugging Face repo ids (MLX conversions for models; a drafter repo as its authors publish
            it); draft is "" for the target's own MTP heads.
        draft_size_gb, target_size_gb: approximate download sizes.
        memory_gb: approximate memory to load both and chat.
        num_draft: suggested draft length.
        source: where the sizes came from (measured on the repo's page, or estimated from parameters).
        drafter: what drafts: "model" (a draft model), "mtp" (the target's built-in heads), "dflash", "eagle3".
    """

    id: str
    use_case: str
    draft: str
    target: str
    draft_size_gb: float
    target_size_gb: float
    memory_gb: float
    num_draft: int
    source: str = ""
    drafter: str = "model"

    def __post_init__(self) -> None:
        if self.drafter not in pair_drafters() or (kind(self.drafter).pairs_with == "built-in") == bool(self.draft):
            raise ValueError(f"pair {self.id}: drafter {self.drafter!r} with draft {self.draft!r}")

    @property
    def download_gb(self) -> float:
        return self.draft_size_gb + self.target_size_gb

    @property
    def drafter_name(self) -> str:
        """'draft model', 'built-in MTP drafter', 'DFlash drafter', 'EAGLE-3 drafter'."""
        return pair_drafters()[self.drafter]

    @property
    def repos(self) -> tuple[str, ...]:
        """The repos to download (the target alone when it drafts with its own heads)."""
        return tuple(r for r in (self.draft, self.target) if r)

    @property
    def label(self) -> str:
        """'Qwen2.5-0.5B-Instruct-4bit -> Qwen2.5-7B-Instruct-4bit'; 'Qwen3.5-4B-... (built-in MTP drafter)'."""
        if not self.draft:
            return f"{self.target.split('/')[-1]} ({self.drafter_name})"
        return f"{self.draft.split('/')[-1]} -> {self.target.split('/')[-1]}"

    @property
    def short_label(self) -> str:
        """'Qwen2.5-0.5B → Qwen2.5-7B': the model families and sizes, for narrow lists."""
        if not self.draft:
            return f"{_short(self.target)} (built-in MTP)"
        return f"{_short(self.draft)} → {_short(self.target)}"


def _short(repo_id: str) -> str:
    name = repo_id.split("/")[-1]
    return re.sub(r"-(Instruct|it)(?=-|$)|-\d+bit$", "", name)


@dataclass(frozen=True)
class PairStatus:
    """A catalog pair on this machine: which models are downloaded, and whether the pair fits in memory."""

    pair: RecommendedPair
    draft_downloaded: bool
    target_downloaded: bool
    fit: Fit

    @property
    def downloaded(self) -> bool:
        return self.draft_downloaded and self.target_downloaded

    @property
    def to_download_gb(self) -> float:
        return (0 if self.draft_downloaded else self.pair.draft_size_gb) + (
            0 if self.target_downloaded else self.pair.target_size_gb
        )


def pair_statuses(available_gb: float | None = None) -> list[PairStatus]:
    """Every catalog pair with its download state and fit (the CLI's list-models and the GUI's picker)."""
    from .loading import cached_repo_path

    statuses = []
    for pair in recommended_pairs():
        statuses.append(
            PairStatus(
                pair,
                not pair.draft or cached_repo_path(pair.draft) is not None,
                cached_repo_path(pair.target) is not None,
                check_fit(pair.memory_gb, available_gb),
            )
        )
    return statuses


@lru_cache(maxsize=1)
def _load() -> tuple[str, tuple[RecommendedPair, ...]]:
    data = json.loads(CATALOG_PATH.read_text())
    return data["default"], tuple(RecommendedPair(**entry) for entry in data["pairs"])


def recommended_pairs() -> tuple[RecommendedPair, ...]:
    return _load()[1]


def default_pair() -> RecommendedPair:
    default_id, pairs = _load()
    return next(p for p in pairs if p.id == default_id)
