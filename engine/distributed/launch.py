"""`specchat-cli generate --hosts FILE`: the same command on every Mac, started by MLX's own launcher.

`mlx.launch --hostfile FILE --backend ring` starts the command on each host (over ssh; locally for 127.0.0.1),
hands each rank `MLX_RANK` and the ring's hostfile, and forwards every rank's output. Each rank then sees
`MLX_RANK` and joins the pipeline (cluster.py). SpecChat and the model must sit at the same paths on every Mac,
as mlx.launch expects of any program.

mlx.launch exits 0 even when a rank failed, so its exit status is not ours: a rank's "error: ..." line (the head
names the Mac that failed) or mlx.launch's own "exited with code" warning makes this command fail, and
mlx.launch's log lines are kept out of the terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from .hostfile import NAMES_ENV, read_hostfile

DEFAULT_PORT = 32323  # mlx.launch's own default first port
_LAUNCHER_LOG = ("[WARN]", "[INFO]", "[ERROR]")


def launcher() -> list[str]:
    """How to run mlx.launch with this interpreter's MLX."""
    script = Path(sys.executable).parent / "mlx.launch"
    if script.is_file():
        return [sys.executable, str(script)]
    return [sys.executable, "-c", "import sys; from mlx._distributed_utils.launch import main; sys.exit(main())"]


def launch_command(hostfile: Path, argv: Sequence[str], port: int = DEFAULT_PORT, env: Sequence[str] = ()) -> list[str]:
    """The mlx.launch command that runs `python -m engine ARGV` on every host of `hostfile`."""
    names = ",".join(host.ssh for host in read_hostfile(hostfile))
    options = ["--hostfile", str(hostfile), "--backend", "ring", "--starting-port", str(port),
               "--env", f"{NAMES_ENV}={names}", *(f"--env={e}" for e in env)]
    return [*launcher(), *options, "--", sys.executable, "-m", "engine", *argv]


def launch(hostfile: Path, argv: Sequence[str], port: int = DEFAULT_PORT, out: IO[str] | None = None) -> int:
    """Run `python -m engine ARGV` on every host; 0 only if no rank reported a failure."""
    command = launch_command(hostfile, argv, port, _passed_env())
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    failed = threading.Event()
    errors = threading.Thread(target=_forward_errors, args=(process.stderr, failed), daemon=True)
    errors.start()
    stdout = process.stdout
    assert stdout is not None  # Popen gives a pipe for stdout=PIPE
    for chunk in iter(lambda: stdout.read(1), ""):
        (out or sys.stdout).write(chunk)
        (out or sys.stdout).flush()
    code = process.wait()
    errors.join()
    return 1 if failed.is_set() or code else 0


def _forward_errors(stream: IO[str], failed: threading.Event) -> None:
    """Pass the ranks' standard error on, minus mlx.launch's log lines; note whether anything failed."""
    for line in stream:
        plain = line.replace("\033[33m", "").replace("\033[32m", "").replace("\033[31m", "").replace("\033[0m", "")
        if line.strip() and not plain.strip():
            continue  # only mlx.launch's colour codes (a reset it wrote after a rank's last line): nothing to say
        if plain.startswith(_LAUNCHER_LOG):
            if "exited with code" in plain or "was killed" in plain:
                failed.set()
            continue
        if plain.startswith("error:"):
            failed.set()
        sys.stderr.write(line)
        sys.stderr.flush()


def _passed_env() -> list[str]:
    """Settings of this shell the ranks should share (the emulated hop delay, the join timeout)."""
    keys = ("SPECCHAT_PIPELINE_HOP_DELAY_MS", "SPECCHAT_JOIN_TIMEOUT_S", "SPECCHAT_HOME")
    return [f"{key}={os.environ[key]}" for key in keys if key in os.environ]
