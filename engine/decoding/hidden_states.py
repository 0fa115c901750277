"""Reading the target's hidden states out of the pass that verifies a draft, for drafters that draft from them.

MTP heads, DFlash, DSpark and EAGLE-3 draft from the target's own hidden states at the positions it has just
verified. Running the target a second time to get them would cost what the draft saves, so the verify pass
itself records them: `forward_with_taps` runs an mlx-lm model exactly as `model(inputs, cache=cache)` does and
also returns the states its taps name. Nothing in the model changes: for the length of the call the tapped
modules' classes are swapped for subclasses that record what goes in and out of them (the weights, the module
tree and the computation stay the same), so it works for every mlx-lm model class with a `layers` list,
dense and hybrid (GatedDeltaNet, Mamba) alike, and costs no extra computation.

The API (another drafter plugs in here; `taps` is what it declares it needs):

    logits, states = forward_with_taps(model, inputs, cache, taps)
    # inputs (B, L) ids; logits (B, L, V) exactly as model(inputs, cache=cache) returns them;
    # states: one (B, L, H) array per tap, in the order of `taps`, lazy like the logits.
    logits, states = run_with_taps(model, run, taps)
    # any pass through the model's layers, as `run()` makes it (a vision target's prefill feeds the image's
    # embeddings rather than ids): its logits, and the same states

    LayerTap(i)                  the output of decoder layer i (DFlash taps these; -1 is the last layer)
    LayerTap(i, "input")         the input of decoder layer i (EAGLE-3; layer 0's input is the embeddings)
    LAST_PRE_NORM                the last layer's output before the final norm (mlx-lm #990's MTP input)
    LAST_POST_NORM               after the final norm: what the LM head reads (MTPLX's and vLLM's MTP input)

A `CachedModel` with a `HiddenStateListener` attached runs all its passes this way (prefill chunks, plain
steps, verify passes) and hands each pass's states to the listener with the position of its first token, so
a drafter sees every position the target computes without asking for any of them again. This is the mechanism,
below `CachedModel`; what a drafter keeps of what it heard is `drafting/drafter_state.py`'s, above it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import mlx.core as mx
import mlx.nn as nn

from ..errors import UnsupportedModelError


@dataclass(frozen=True)
class LayerTap:
    """One hidden state a drafter reads: the input or output of a decoder layer, optionally through the final norm.

    Attributes:
        layer: index into the model's decoder layers (negative counts from the end).
        where: "output" (what the layer adds to the residual stream, included) or "input".
        normed: the state after the model's final norm (only for the last layer's output: the LM head's input).
    """

    layer: int
    where: Literal["input", "output"] = "output"
    normed: bool = False


LAST_PRE_NORM = LayerTap(-1)
LAST_POST_NORM = LayerTap(-1, normed=True)


class HiddenStateListener(Protocol):
    """Something that wants the target's hidden states of every pass (a drafter's state).

    Attributes:
        taps: the states it reads.
    """

    taps: tuple[LayerTap, ...]

    def heard(self, position: int, states: list[mx.array]) -> None:
        """A pass ran over the target positions from `position` on; `states` are its taps' (L, H) states, lazy.
        The target's ids for those positions are in its cache's `tokens` (or pending until resolved)."""

    @property
    def state(self) -> list[mx.array]:
        """Arrays to evaluate with each prefill chunk (so that what the listener built from it stays small)."""


def forward_with_taps(model: nn.Module, inputs: mx.array, cache: Any, taps: Sequence[LayerTap]) -> tuple[mx.array, list[mx.array]]:
    """`model(inputs, cache=cache)`, and the hidden states `taps` name, from the same pass (see the module doc)."""
    return run_with_taps(model, lambda: model(inputs, cache=cache), taps)


def run_with_taps(model: nn.Module, run: Callable[[], mx.array], taps: Sequence[LayerTap]) -> tuple[mx.array, list[mx.array]]:
    """What `run()` returns (a pass through `model`'s layers), and the hidden states `taps` name, from that pass."""
    layers = decoder_layers(model)
    sources = [_source(model, layers, tap) for tap in taps]
    with _recording([module for module, _ in sources]) as seen:
        logits = run()
    return logits, [seen[id(module)][side] for module, side in sources]


def decoder_layers(model: nn.Module) -> list[nn.Module]:
    """The model's decoder layers, in order (mlx-lm models list them as `layers`, nested ones included)."""
    for owner in (model, getattr(model, "model", None), getattr(model, "language_model", None)):
        layers = getattr(owner, "layers", None) if owner is not None else None
        if isinstance(layers, list) and layers:
            return layers
    raise UnsupportedModelError(
        f"{type(model).__name__} has no list of decoder layers whose hidden states a drafter could read. "
        "Use a draft model or prompt lookup with it instead."
    )


def final_norm(model: nn.Module) -> nn.Module:
    """The norm the model applies before its LM head."""
    for owner in (getattr(model, "model", None), getattr(getattr(model, "language_model", None), "model", None), model):
        norm = getattr(owner, "norm", None) if owner is not None else None
        if isinstance(norm, nn.Module):
            return norm
    raise UnsupportedModelError(f"{type(model).__name__} has no final norm before its LM head that a drafter could read.")


def _source(model: nn.Module, layers: list[nn.Module], tap: LayerTap) -> tuple[nn.Module, int]:
    """The module whose call shows the tapped state, and which side of it: 0 its input, 1 its output."""
    if tap.normed:
        if tap.where != "output" or tap.layer not in (-1, len(layers) - 1):
            raise ValueError(f"{tap}: only the last layer's output goes through the final norm.")
        return final_norm(model), 1
    if not -len(layers) <= tap.layer < len(layers):
        raise UnsupportedModelError(
            f"A drafter asked for layer {tap.layer} of a target with {len(layers)} layers: it was made for another model."
        )
    return layers[tap.layer], 0 if tap.where == "input" else 1


_RECORDERS: dict[type, type] = {}


def _recorder(base: type) -> type:
    """A subclass of `base` whose calls leave (input, output) in the recording it is given."""
    if base not in _RECORDERS:

        def call(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
            out = base.__call__(self, *args, **kwargs)
            first = args[0] if args else next(iter(kwargs.values()))
            _LOCAL.recordings[-1][id(self)] = (first, out[0] if isinstance(out, tuple) else out)
            return out

        _RECORDERS[base] = type(f"Recording{base.__name__}", (base,), {"__call__": call})
    return _RECORDERS[base]


_LOCAL = threading.local()  # each thread's recordings in progress (the app's worker and a server's engine thread)


@contextmanager
def _recording(modules: list[nn.Module]) -> Iterator[dict[int, tuple[mx.array, mx.array]]]:
    """While inside, each module records its last call's input and output (by the module's id)."""
    originals = {id(m): (m, type(m)) for m in modules}
    seen: dict[int, tuple[mx.array, mx.array]] = {}
    if not hasattr(_LOCAL, "recordings"):
        _LOCAL.recordings = []
    _LOCAL.recordings.append(seen)
    for module, base in originals.values():
        module.__class__ = _recorder(base)
    try:
        yield seen
    finally:
        for module, base in originals.values():
            module.__class__ = base
        _LOCAL.recordings.pop()
