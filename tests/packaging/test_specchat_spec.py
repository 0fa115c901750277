"""The PyInstaller spec builds a bundle whose frozen app passes its own self-test (a missing module or data file
in the bundle fails here), with one libmlx and the resources it needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packaging"))
from bundle_layout import link_metallib_beside_every_libmlx, problems  # noqa: E402 - packaging/ is no package: on the path only from the line above


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    work = Path(os.environ.get("SPECCHAT_PYINSTALLER_WORK", tmp_path_factory.mktemp("work")))
    subprocess.run(
        [sys.executable, "-m", "PyInstaller", str(ROOT / "packaging" / "specchat.spec"), "--noconfirm",
         "--log-level", "ERROR", "--distpath", str(dist), "--workpath", str(work)],
        cwd=ROOT, check=True, timeout=900,
    )
    return dist


@pytest.mark.packaging
def test_the_frozen_app_passes_its_self_test(bundle: Path) -> None:
    executable = bundle / "specchat" / "specchat"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(executable), "--self-test"], capture_output=True, text=True, timeout=300, env=env, cwd=bundle)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("self-test passed: tiny-target with draft tiny-draft")


@pytest.mark.packaging
def test_the_bundle_has_one_libmlx_and_its_resources(bundle: Path) -> None:
    assert problems(bundle, metal=False) == []


def test_every_libmlx_path_gets_the_metallib_beside_it(tmp_path: Path) -> None:
    """The macOS layout, simulated: a real libmlx with its metallib in mlx/lib and a top-level alias."""
    lib = tmp_path / "Frameworks" / "mlx" / "lib"
    lib.mkdir(parents=True)
    (lib / "libmlx.dylib").write_bytes(b"lib")
    (lib / "mlx.metallib").write_bytes(b"metal")
    (tmp_path / "Frameworks" / "libmlx.dylib").symlink_to("mlx/lib/libmlx.dylib")
    assert problems(tmp_path, metal=True)[0] == "no mlx.metallib beside Frameworks/libmlx.dylib"
    added = link_metallib_beside_every_libmlx(tmp_path)
    assert added == [tmp_path / "Frameworks" / "mlx.metallib"]
    assert (tmp_path / "Frameworks" / "mlx.metallib").read_bytes() == b"metal"
    assert (tmp_path / "Frameworks" / "mlx.metallib").is_symlink()  # a link, never a second 147 MB copy
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "libmlx.dylib").write_bytes(b"lib")
    assert any("2 copies of libmlx" in p for p in problems(tmp_path, metal=True))
