"""A prompt cache with several entries: prefixes shelved beside a model's live cache, recalled when a prompt starts with one.

A `CachedModel` answers a prompt by keeping what its cache shares with it and rewinding the rest, which serves
a chat well (each turn extends the last). An agent alternates prompts that each open with 15-20k tokens of
their own system prompt and tools (Claude Code's main loop, a title request, its sub-agents): with one live
cache every switch throws a prefix away and reads the next one anew (a recorded 19k-token Codex request took
224 s to its first token; the same prefix plus a turn 1.4 s, but 90 s again after a title request between).

So before a prompt is read, `PromptCache.recall` does, for each model that will read it:

1. shelve the live cache's contents when the prompt would rewind at least `SHELVE_AFTER` of their tokens away
   (`CachedModel.fork`: views of its keys and values, no copy; MLX never writes into a buffer another array
   still holds, so the live cache's next write copies what it keeps and the shelved entry stays as it was);
2. take back the shelved entry sharing the longest prefix with the prompt (`CachedModel.adopt`) when it shares
   more than the live cache does. The live cache then catches up on the rest as always, so the output is the
   one a prompt read anew gives: the keys and values are those that prefix's own passes computed.

Entries go least recently shelved first, so that the keys and values they hold stay within `budget_bytes`
(`specchat-cli serve --prompt-cache-mb`). The target's and the draft model's entries share that one budget;
the live caches are not counted (they exist without this cache too). With a `disk` (`--prompt-cache-disk-mb`),
an entry that goes is written to a file instead (`prompt_cache_disk.py`), and step 2 also weighs the files: one
sharing more with the prompt than the live cache and every shelved entry is read back (with no memory budget,
every prefix thrown away goes straight to disk). What memory holds when the entries are forgotten (the pair is let go
at shutdown, or the draft model or the caches' precision changes) is written to the disk first (`clear`).

A vision target's prompt shows images whose tokens all take the same id, so ids alone would take one image's
prefix for another's: a cache keeps its images' fingerprint (`CachedModel.images`), an entry keeps it with its
contents, and an entry is taken back past its first image only for a prompt with the same images
(`CachedModel.shared_with`). A follow-up question about an image shelved earlier then runs neither the vision
tower nor the prefill again; another image of the same size, whose ids are the same, is read anew from it.

What cannot be shelved keeps the one-entry behaviour: caches whose layers are not all plain `KVCache`s (recurrent
state, sliding windows, keys quantized with --kv-bits), for which `fork` returns None. Drafters that draft from the
target's hidden states (MTP, EAGLE-3, DFlash, DSpark) keep their one state too: after a recall they see the target's
ids change, rewind, and draft again from the states of the target's next passes. That stays exact (the target
verifies every token); only their first rounds after a recall may draft less.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..models.vision import ImageKey
from .cached_model import CachedModel
from .prompt_cache_disk import DiskCache

MB = 1 << 20
DEFAULT_BUDGET_MB = 4096  # a 7B model's keys and values for ~70k tokens; for a 0.5B model ~350k
BUDGET_HELP = (f"memory for prompt prefixes kept beside the live one, which agents alternate (default {DEFAULT_BUDGET_MB}; "
               "0 keeps one prefix)")
SHELVE_AFTER = 32  # tokens a prompt would rewind away before they are worth shelving (not a chat's next turn)


def megabytes(text: str) -> int:
    """A budget in MiB as given on the command line (`--prompt-cache-mb`, `--prompt-cache-disk-mb`): 0 or more."""
    value = int(text)
    if value < 0:
        raise ValueError(f"{value} MB: give 0 or more")
    return value


@dataclass
class Entry:
    """A shelved prefix: the model it belongs to, a twin cache holding it, and the bytes its keys and values take."""

    owner: CachedModel
    twin: CachedModel
    nbytes: int


class PromptCache:
    """Shelved prefixes of the pair's models, least recently shelved first, within a memory budget.

    Args:
        budget_mb: the most the shelved keys and values may take, in MiB (0: none in memory, so one live prefix only,
            and every prefix thrown away goes to the disk if there is one).

    Attributes:
        hits: recalls that took a shelved entry (or a spilled one) back (for tests and the benchmark).
        disk: where evicted entries go rather than away (`prompt_cache_disk.py`; None, the default: nowhere).
    """

    def __init__(self, budget_mb: int = DEFAULT_BUDGET_MB) -> None:
        self.budget_bytes = budget_mb * MB
        self._entries: list[Entry] = []
        self.hits = 0
        self.disk: DiskCache | None = None

    @property
    def nbytes(self) -> int:
        """Bytes the shelved keys and values take."""
        return sum(e.nbytes for e in self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self, live: Sequence[CachedModel] = ()) -> None:
        """Forget every shelved prefix (the models or their cache's precision changed, or the pair is let go), first
        writing them to the disk if there is one, with what the `live` caches hold (they start over or go too)."""
        if self.disk is not None:
            self._spill(live)
        self._entries.clear()

    def close(self, live: Sequence[CachedModel]) -> None:
        """`clear`, then wait for the disk's files to be written (the pair is let go, the process may end)."""
        self.clear(live)
        if self.disk is not None:
            self.disk.close()

    def _spill(self, live: Sequence[CachedModel]) -> None:
        """Write every prefix held in memory to the disk: the shelved ones shelved longest ago first, the live ones
        last, so that the disk's budget, if they do not all fit, keeps the most recent."""
        assert self.disk is not None
        twins = [e.twin for e in self._entries]
        worth = [cache for cache in live if len(cache.tokens) >= SHELVE_AFTER and not cache.pending]
        twins += [twin for cache in worth if (twin := cache.fork(len(cache.tokens))) is not None]
        for twin in twins:
            self.disk.write(twin)

    def recall(self, caches: list[CachedModel], prompt: list[int], images: ImageKey | None = None) -> None:
        """Before `prompt` (showing `images`: a vision target's prompt) is read by `caches`: shelve what each would
        throw away, and take back its best entry."""
        for cache in caches:
            self._recall_one(cache, prompt, images)

    def _recall_one(self, cache: CachedModel, prompt: list[int], images: ImageKey | None) -> None:
        if cache.pending:
            return  # ids not known yet: nothing to compare (an interrupted answer's cache starts over anyway)
        live = _shared(cache, prompt, images)
        taken = self._take(cache, prompt, images, live)
        thrown = len(cache.tokens) - (0 if taken is not None else live)
        if thrown >= SHELVE_AFTER:
            self._shelve(cache)
        if taken is not None:
            cache.adopt(taken)
            self.hits += 1

    def _take(self, cache: CachedModel, prompt: list[int], images: ImageKey | None, live: int) -> CachedModel | None:
        """The twin sharing the most with the prompt, if more than the live cache: a shelved entry (off the shelf,
        before shelving, whose eviction might drop it), or else a file (a disk read, dearer than a shelved view)."""
        best = max((e for e in self._entries if e.owner is cache and _same_layers(e, cache)),
                   key=lambda e: _shared(e.twin, prompt, images), default=None)
        shelved = _shared(best.twin, prompt, images) if best is not None else 0
        if self.disk is not None:
            spilled, on_disk = self.disk.best(cache, prompt, images)
            twin = self.disk.load(spilled, cache) if spilled is not None and on_disk > max(live, shelved) else None
            if twin is not None:
                return twin  # else: no file, or a bad one (deleted)
        if best is None or shelved <= live:
            return None
        self._entries.remove(best)
        return best.twin

    def _shelve(self, cache: CachedModel) -> None:
        """Keep the live cache's contents as an entry, unless another entry already holds them, then evict."""
        if self.budget_bytes <= 0 and self.disk is None:
            return
        mine = [e for e in self._entries if e.owner is cache]
        if any(_holds(e.twin, cache) for e in mine):
            return  # an entry holds these tokens and more
        twin = cache.fork(len(cache.tokens))
        if twin is None:
            return  # a cache family that cannot be forked: the one live prefix only
        for dominated in (e for e in mine if _holds(cache, e.twin)):
            self._entries.remove(dominated)
        self._entries.append(Entry(cache, twin, _kv_bytes(twin)))
        self._evict()

    def _evict(self) -> None:
        """Drop the entries shelved longest ago until the rest fit the budget, onto the disk if it takes them."""
        while self._entries and self.nbytes > self.budget_bytes:
            dropped = self._entries.pop(0)
            if self.disk is not None:
                self.disk.write(dropped.twin)


def _shared(cache: CachedModel, prompt: list[int], images: ImageKey | None) -> int:
    """Prompt tokens a cache keeps (its images only for the same images; catch_up always feeds the prompt's last
    token again)."""
    return min(cache.shared_with(prompt, images), len(prompt) - 1)


def _holds(big: CachedModel, small: CachedModel) -> bool:
    """Whether `big` holds all that `small` does: its tokens, and its images (another image's are other states)."""
    return big.shared_with(small.tokens, small.images.key if small.images is not None else None) == len(small.tokens)


def _same_layers(entry: Entry, cache: CachedModel) -> bool:
    """Whether an entry fits the live cache's layers (not after a change of --kv-bits made them quantized)."""
    return [type(layer) for layer in entry.twin.cache] == [type(layer) for layer in cache.cache]


def _kv_bytes(twin: CachedModel) -> int:
    """Bytes of a twin's keys and values (the positions it holds: the views' own size, not the buffers' spare room)."""
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in twin.cache if layer.keys is not None)
