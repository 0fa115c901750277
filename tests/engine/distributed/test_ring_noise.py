"""MLX's "[ring] ..." lines stay out of the terminal; every other line of standard error passes, in order."""

from __future__ import annotations

import subprocess
import sys

from .commands import ROOT

# The child loads ring_noise.py alone (it imports only the standard library): importing it as
# engine.distributed.ring_noise first imports the engine package, MLX and mlx-lm, which cost the child most of
# this test's time and is not what it tests.
SCRIPT = """
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("ring_noise", "engine/distributed/ring_noise.py")
ring_noise = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ring_noise)
quiet_ring_messages, urgent = ring_noise.quiet_ring_messages, ring_noise.urgent
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
