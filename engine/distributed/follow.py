"""One Mac of a pipeline whose head is the app: `python -m engine.distributed.follow TARGET`, started by
`followers.py` with `MLX_RANK` and the ring's hostfile set.

It checks in with the head, joins the ring and serves its stage until the head says STOP (`cluster.start`, the
same path a rank of `specchat-cli --hosts` takes). Errors are one line on standard error, which the head quotes
when this Mac fails before joining.
"""

from __future__ import annotations

import os
import sys

from ..errors import SpecChatError


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("error: usage: python -m engine.distributed.follow TARGET (started by SpecChat's head)", file=sys.stderr)
        return 2
    from .cluster import start
    from .followers import check_in

    try:
        check_in(int(os.environ.get("MLX_RANK", "0")))
        start(argv[0])
    except (SpecChatError, OSError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
