"""A pipelined target from start to end: join the ring, agree on the model and the split, load, then generate or serve.

Every rank runs `start` (the same command on every Mac, as `mlx.launch` runs it):

1. join the ring (`group.py`), and route MLX's ring chatter away (`ring_noise.py`);
2. the head opens its roll call and says where (one all-gather); every rank connects to it, so from here on a
   rank that fails or stops is named (`roll_call.py`);
3. build the model lazily; a rank that cannot tells the head why and leaves;
4. agree (one all-gather): the same model everywhere (`handshake.py`), and each Mac's free memory, from which
   every rank computes the same uneven split (`layer_split.py`);
5. read this stage's weights (`shard.py`); the head loads the tokenizer and the draft model and returns a
   `HeadSession` whose pair generates as on one Mac; the other ranks follow the head until it stops
   (`worker.py`) and return None.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..decoding.pair import ModelPair
from ..errors import DistributedError, SpecChatError
from ..models.loading import LoadedModel, load_model, resolve_model_path
from ..models.memory import folder_size_gb
from . import handshake, layer_split
from .fingerprint import fingerprint
from .group import join_ring
from .head import PipelineHead
from .hostfile import host_label, ring_addresses
from .pipeline import Stage, cut, stages
from .ring_noise import quiet_ring_messages
from .roll_call import HeadRollCall, WorkerRollCall
from .shard import LazyModel, build_lazily, read_stage
from .transport import Transport, hop_delay_from_env
from .watchdog import Watchdog
from .worker import serve


class RingLost(SpecChatError):
    """This worker's ring connection broke: another rank left (the head names which)."""


@dataclass
class HeadSession:
    """The head's side of a running pipeline.

    Attributes:
        pair: the target (pipelined) and the draft model, as `generate_stream` takes them.
        split: layers per rank (index = rank; rank 0 runs the last ones).
        transport: the head's end of the ring (its hop count and time in collectives).
    """

    pair: ModelPair
    split: list[int]
    transport: Transport
    head: PipelineHead
    roll_call: HeadRollCall
    stages: list[Stage] = field(default_factory=list)

    def describe(self) -> str:
        """One line: which Mac runs which layers."""
        parts = [f"{host_label(s.rank)} layers {s.start}-{s.end - 1}" for s in reversed(self.stages)]
        return f"the target runs across {len(self.split)} Macs: " + ", ".join(parts)

    def close(self) -> None:
        """Stop every rank (once) and wait for their goodbyes; over a failed ring, just let them go."""
        if self.transport.broken:
            self.roll_call.dismiss()
            return
        try:
            self.head.close()
        finally:
            self.roll_call.close()

    def __enter__(self) -> HeadSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def start(target: str, draft: str | None = None) -> HeadSession | None:
    """Join the pipeline as this process's rank: the head gets a HeadSession, the others serve and get None."""
    quiet_ring_messages()
    transport = Transport(join_ring(), hop_delay_s=hop_delay_from_env())
    if transport.rank == 0:
        return _start_head(transport, target, draft)
    _run_worker(transport, target)
    return None


def _start_head(transport: Transport, target: str, draft: str | None) -> HeadSession:
    roll_call = HeadRollCall(_own_address())
    transport.explain = lambda e: DistributedError(
        f"A Mac left while the pipeline was starting ({e}): see its own output, then start again.")
    handshake.exchange(transport, handshake.Statement((0,) * 4, 0, roll_call.port))
    roll_call.gather(transport.size)
    transport.explain = roll_call.explain
    transport.watchdog = Watchdog(_no_answer(transport.size))
    try:
        return _load_head(transport, roll_call, target, draft)
    except BaseException:
        roll_call.dismiss()
        raise


def _load_head(transport: Transport, roll_call: HeadRollCall, target: str, draft: str | None) -> HeadSession:
    lazy = build_lazily(target)
    reserve = lazy.outer_gb() + (folder_size_gb(resolve_model_path(draft)) if draft else 0.0)
    split = _agree(transport, lazy, reserve)
    every = stages(split)
    cut(lazy.model, every[0], transport)
    read_stage(lazy.model, every[0])
    head = PipelineHead(lazy.model, transport)
    pair = ModelPair(_loaded(lazy, head), load_model(draft) if draft else None)
    return HeadSession(pair, split, transport, head, roll_call, every)


def _run_worker(transport: Transport, target: str) -> None:
    """Load this rank's stage and follow the head; every way out tells the head why (roll_call.py)."""
    statements = handshake.exchange(transport, handshake.Statement((0,) * 4, 0))
    roll_call = WorkerRollCall(ring_addresses()[0], statements[0].port, transport.rank)
    roll_call.watch_head()
    transport.explain = lambda e: RingLost(str(e))
    try:
        lazy = build_lazily(target)
        reserve = lazy.outer_gb() if transport.rank == transport.size - 1 else 0.0
        stage = stages(_agree(transport, lazy, reserve))[transport.rank]
        cut(lazy.model, stage, transport)
        read_stage(lazy.model, stage)
        serve(lazy.model, transport)
    except RingLost:
        roll_call.say("lost")
        sys.exit(1)
    except SpecChatError as e:
        roll_call.say(f"error {e}")
        sys.exit(1)
    except BaseException as e:
        roll_call.say(f"error {type(e).__name__}: {e} (a bug: please report it)")
        raise
    roll_call.say("bye")


def _agree(transport: Transport, lazy: LazyModel, reserve_gb: float) -> list[int]:
    """Exchange fingerprints and free memory; refuse a different model; every rank's same split."""
    room_mb = int(max(layer_split.stated_memory_gb() - reserve_gb, 0) * 1000)
    own = handshake.Statement(tuple(fingerprint(lazy.config, lazy.model)), room_mb)
    statements = handshake.exchange(transport, own)
    handshake.check_same_model(statements, lazy.spec)
    room = [s.free_mb / 1000 for s in statements]
    return layer_split.split_layers(lazy.num_layers, room, lazy.layer_gb(), [0.0] * len(room))


def _no_answer(size: int) -> Callable[[float], str]:
    """The watchdog's line: which Macs did not answer."""
    names = " and ".join(host_label(r) for r in range(1, size))
    return lambda limit: (f"No answer from {names} for {limit:.0f} s: a Mac is cut off or frozen. Check the network "
                          "and the Macs, then start again.")


def _loaded(lazy: LazyModel, head: PipelineHead) -> LoadedModel:
    from mlx_lm.utils import load_tokenizer

    tokenizer = load_tokenizer(lazy.path, eos_token_ids=lazy.config.get("eos_token_id"))
    return LoadedModel(name=lazy.spec, path=lazy.path, model=head, tokenizer=tokenizer, config=lazy.config)  # type: ignore[arg-type]  # the head stands in for the model


def _own_address() -> str:
    """The address the other ranks reach the head at (its ring address)."""
    addresses = ring_addresses()
    if not addresses:
        raise DistributedError("MLX_HOSTFILE names no hosts: start the ranks with mlx.launch or specchat-cli --hosts.")
    return addresses[int(os.environ.get("MLX_RANK", "0"))]
