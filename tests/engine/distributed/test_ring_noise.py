"""MLX's "[ring] ..." lines stay out of the terminal; every other line of standard error passes, in order."""

from __future__ import annotations

import subprocess
import sys

from .commands import ROOT

SCRIPT = """
import os, sys
from engine.distributed.ring_noise import quiet_ring_messages, urgent
quiet_ring_messages()
os.write(2, b"[ring] Socket 4 was closed by the peer\\n")
print("error: one clear line", file=sys.stderr, flush=True)
os.write(2, b"[ring] Too many send/recv errors. Failing pending tasks...\\nkept too\\n")
urgent("straight to the terminal")
"""


def test_ring_lines_are_dropped_and_the_rest_kept() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0
    assert sorted(done.stderr.splitlines()) == sorted(["error: one clear line", "kept too", "straight to the terminal"])
    assert done.stderr.index("error: one clear line") < done.stderr.index("kept too")
