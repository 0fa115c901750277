"""A drafter's side of a chat: what the pair keeps of a drafter between answers, and, for a drafter that listens, the
target's hidden states it heard, kept by position, and its place on the target.

The pair keeps one `DrafterState` per drafter that has one (its round module's `load_state` makes it) and forgets
it with the caches. A drafter that drafts from the target's hidden states (MTP heads, EAGLE-3, DFlash, DSpark)
keeps `AttachedStates`: it attaches to the target's `CachedModel` as its listener (`hidden_states.py`: how a pass
hands them over) and keeps what it heard until it drafts from it. The stores sit above `CachedModel`, the tap
mechanism below it.
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from typing import Protocol

import mlx.core as mx

from ..cached_model import CachedModel
from ..hidden_states import LayerTap


class DrafterState(Protocol):
    """What the pair keeps of a drafter across answers (its network bound to the target, what it built of the chat)."""

    def reset(self) -> None:
        """Forget what it built of the chat, as the pair's caches do (a fresh pair would hold none)."""


class HiddenStore:
    """The target's hidden states by position, as its passes produced them, kept for drafters to read.

    A pass at a position replaces everything stored from there on: the target only runs a position again after
    rewinding to it, so what was stored beyond it belonged to tokens that are gone.
    """

    def __init__(self) -> None:
        self._segments: list[tuple[int, mx.array]] = []  # (first position, (L, H) states), in order, contiguous

    @property
    def start(self) -> int:
        """The first position held (0 when none is)."""
        return self._segments[0][0] if self._segments else 0

    @property
    def end(self) -> int:
        """The position after the last one held (0 when none is)."""
        return self._segments[-1][0] + self._segments[-1][1].shape[0] if self._segments else 0

    def put(self, position: int, states: mx.array) -> None:
        """States (L, H) of positions `position`.. from a pass; a gap before them drops what came before it."""
        self.keep_before(position)
        if self._segments and self.end != position:
            self._segments = []
        self._segments.append((position, states))

    def keep_before(self, position: int) -> None:
        """Forget the states at `position` and after."""
        while self._segments and self._segments[-1][0] >= position:
            self._segments.pop()
        if self._segments and self.end > position:
            first, states = self._segments.pop()
            self._segments.append((first, states[: position - first]))

    def drop_before(self, position: int) -> None:
        """Forget the states before `position`."""
        if self.end <= position:
            self._segments = []
            return
        index = bisect.bisect_right(self._segments, position, key=lambda segment: segment[0]) - 1
        del self._segments[: max(index, 0)]
        first, states = self._segments[0]
        if first < position:
            self._segments[0] = (position, states[position - first :])

    def rows(self, start: int, end: int) -> mx.array | None:
        """The states of positions [start, end) as one (end - start, H) array, or None unless all are held."""
        if not self._segments or start < self.start or end > self.end or start >= end:
            return None
        first = bisect.bisect_right(self._segments, start, key=lambda segment: segment[0]) - 1
        parts = []
        for f, states in self._segments[first:]:
            if f >= end:
                break
            parts.append(states[max(start - f, 0) : end - f])
        return parts[0] if len(parts) == 1 else mx.concatenate(parts)

    def clear(self) -> None:
        self._segments = []


class AttachedStates(ABC):
    """What a drafter's side of a chat that hears the target's passes keeps: the target's cache it listens to, the
    states heard and not read yet, and whether it missed passes (an answer that ran without it). A subclass is the
    target's `HiddenStateListener`: it names its `taps`, takes what it `heard`, and says how to forget.

    Args:
        target: the target's cache, whose passes it hears while attached.
    """

    taps: tuple[LayerTap, ...]  # the target states it reads

    def __init__(self, target: CachedModel) -> None:
        self.target = target
        self.store = HiddenStore()
        self.heard_passes = target.passes
        self.images = target.images

    def attach(self) -> None:
        """Hear the target's passes from now on; states stored before passes it did not hear are dropped."""
        if self.target.passes != self.heard_passes:
            self.store.clear()
        self.follow_images()
        self.target.listener = self

    def follow_images(self) -> None:
        """Forget what was heard from the first image on when the target's cache holds other images than it did
        (read anew, or a shelved prefix taken back): their tokens take the same ids, so the ids that tell a drafter
        which of its states still hold cannot tell it that."""
        if self.target.images == self.images:
            return
        self.forget_from(min(s.start for s in (self.target.images, self.images) if s is not None))
        self.images = self.target.images

    @abstractmethod
    def heard(self, position: int, states: list[mx.array]) -> None:
        """A target pass ran over the positions from `position` on: its taps' (L, H) states, lazy."""

    @property
    @abstractmethod
    def state(self) -> list[mx.array]:
        """Arrays to evaluate with each prefill chunk (what it built from the chunk, kept small)."""

    @abstractmethod
    def reset(self) -> None:
        """Forget everything heard and built from it."""

    @abstractmethod
    def forget_from(self, position: int) -> None:
        """Forget the states at `position` and after, and what the drafter built from them."""

    def detach(self) -> None:
        if self.target.listener is self:
            self.target.listener = None
