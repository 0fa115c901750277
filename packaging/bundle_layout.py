"""Checks and fixes on a built bundle's layout, shared by the spec (after building) and CI (verify).

MLX loads mlx.metallib from the directory of the libmlx it was loaded from (dladdr). PyInstaller may reach
libmlx through more than one path (the real file in mlx/lib and a top-level alias for binaries that depend
on it), so every such path needs an mlx.metallib beside it: a relative symlink to the one real metallib.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def libmlx_paths(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("libmlx.*") if p.name.split(".")[-1] in ("so", "dylib"))


def real_files(paths: list[Path]) -> set[Path]:
    return {p.resolve() for p in paths if p.exists()}


def link_metallib_beside_every_libmlx(dist: Path) -> list[Path]:
    """Add relative mlx.metallib symlinks next to every libmlx path that lacks one; return those added."""
    added = []
    for lib in libmlx_paths(dist):
        beside = lib.parent / "mlx.metallib"
        if beside.exists():
            continue
        real = lib.resolve().parent / "mlx.metallib"
        candidates = [real] + list(dist.rglob("mlx.metallib"))
        target = next((c for c in candidates if c.exists() and not c.is_symlink()), None)
        if target is None:
            continue  # Linux and the CPU backend have no metallib
        beside.symlink_to(os.path.relpath(target, beside.parent))
        added.append(beside)
    return added


def problems(bundle: Path, metal: bool) -> list[str]:
    """What is wrong with a built bundle (empty when it is fine)."""
    found = []
    libs = libmlx_paths(bundle)
    if not libs:
        found.append("no libmlx in the bundle")
    if len(real_files(libs)) > 1:
        found.append(f"{len(real_files(libs))} copies of libmlx: {sorted(map(str, real_files(libs)))}")
    if metal:
        for lib in libs:
            if not (lib.parent / "mlx.metallib").exists():
                found.append(f"no mlx.metallib beside {lib.relative_to(bundle)}")
    for name in ("pairs.json", "tiny_corpus.txt"):
        if not list(bundle.rglob(f"resources/{name}")):
            found.append(f"resources/{name} is missing")
    return found


def main(argv: list[str]) -> int:
    bundle = Path(argv[1])
    found = problems(bundle, metal=sys.platform == "darwin")
    for problem in found:
        print(f"bundle problem: {problem}")
    if not found:
        print(f"bundle layout ok: {bundle}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
