"""The picker's draft checks, remembered across launches, keyed by what the verdict was read from.

Checking a draft against a target reads both tokenizers (and imports a GGUF target first): with a few big
vocabularies listed (Qwen's, Gemma's) the picker's "Checking which drafts fit the target…" took 60-90 s, on every
launch. A verdict depends only on the models' configs and tokenizer files, so it is kept in the app-data folder
under those files' paths, sizes and modification times: a model re-downloaded or converted again is checked anew,
and so is every pair when the rules of the check change (`RULES`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..models.app_paths import data_dir
from ..models.compatibility import PairCheck
from ..models.load_progress import LoadProgress
from .pairing import check_draft

RULES = 4  # raised when check_draft judges or words differently (2: a draft as costly as the target is refused;
# 3: control bytes said in words, as a saved reason is shown as it was saved; 4: byte-fallback entries said as
# bytes, a drafter trained for a target of another width said so)
# What a verdict is read from: configs (a drafter's, the cost, whether a cache can rewind) and tokenizers.
READ_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json",
              "merges.txt", "special_tokens_map.json", "added_tokens.json")


def contents_key(name: str) -> str:
    """A model's name with the path, size and modification time of each file a check reads (a GGUF file: itself)."""
    path = Path(name).expanduser()
    if not path.exists():
        from ..models.loading import cached_repo_path, looks_like_path

        path = (None if looks_like_path(name) else cached_repo_path(name)) or path
    files = [path] if path.is_file() else [path / f for f in READ_FILES]
    stats = [(str(f), f.stat()) for f in files if f.exists()]
    return "|".join([name] + [f"{f}:{s.st_size}:{s.st_mtime_ns}" for f, s in stats])


class DraftChecks:
    """check_draft's verdicts, read from and saved to a JSON file (a missing or damaged one starts empty)."""

    def __init__(self, file: Path | None = None) -> None:
        self.file = file or data_dir() / "draft_checks.json"
        try:
            self._verdicts: dict[str, list] = json.loads(self.file.read_text())
        except (OSError, ValueError):
            self._verdicts = {}

    def check(self, target: str, draft: str, progress: LoadProgress | None = None) -> PairCheck:
        """The verdict on `draft` for `target`, checked now only if their files changed since it was last read (a
        GGUF file's import reported to `progress`)."""
        key = hashlib.sha256(f"{RULES}\n{contents_key(target)}\n{contents_key(draft)}".encode()).hexdigest()
        if key not in self._verdicts:
            check = check_draft(target, draft, progress)
            self._verdicts[key] = [check.compatible, check.reasons]
            self._save()
        compatible, reasons = self._verdicts[key]
        return PairCheck(compatible=compatible, reasons=list(reasons))

    def _save(self) -> None:
        try:
            self.file.write_text(json.dumps(self._verdicts))
        except OSError:
            pass  # remembered for this launch only: the next one checks again
