"""Before `make run` on Linux: the system libraries Qt's window system plugin needs, and a display to use.

PySide6's wheel carries Qt but not the X11 client libraries its xcb plugin links against (libxcb-icccm4,
libxcb-keysyms1, ...), which a fresh desktop install may lack; Qt then stops with "could not load the Qt
platform plugin xcb". This asks `ldd` which libraries the plugin cannot find, installs their Debian packages when
it can (as root with apt-get, as `.ci/run` does for OpenBLAS), and otherwise stops with the exact command to run.
macOS needs none of this.

    python -m app.system_check      (exit 0: ready; 1: the message says what to do)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# The shared libraries Qt's xcb plugin (and the Qt libraries it loads) may miss, with their Debian packages.
DEBIAN_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb.so.1": "libxcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
}


def missing_libraries(ldd_output: str) -> list[str]:
    """The libraries `ldd` reports as "not found", in order, once each."""
    missing = [line.split("=>")[0].strip() for line in ldd_output.splitlines() if "not found" in line]
    return list(dict.fromkeys(missing))


def packages_for(libraries: list[str]) -> tuple[list[str], list[str]]:
    """(Debian packages to install, libraries no package is known for)."""
    packages = list(dict.fromkeys(DEBIAN_PACKAGES[lib] for lib in libraries if lib in DEBIAN_PACKAGES))
    unknown = [lib for lib in libraries if lib not in DEBIAN_PACKAGES]
    return packages, unknown


def xcb_plugin_files() -> list[Path]:
    """Qt's xcb platform plugin and the Qt library it loads, inside the installed PySide6."""
    import PySide6

    qt = Path(PySide6.__file__).parent / "Qt"
    return [f for f in (qt / "plugins" / "platforms" / "libqxcb.so", *sorted((qt / "lib").glob("libQt6XcbQpa.so*"))) if f.exists()]


def ldd_output(files: list[Path]) -> str:
    return "".join(subprocess.run(["ldd", str(f)], capture_output=True, text=True).stdout for f in files)


def install_command(packages: list[str]) -> list[str]:
    return ["apt-get", "install", "-y", "-q", *packages]


def check() -> str | None:
    """None when SpecChat can open its window here; otherwise what to do, in one message."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb":
        return None
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        return ("There is no display to open SpecChat's window on (neither DISPLAY nor WAYLAND_DISPLAY is set). "
                "Run it from a desktop session, or check the app works with `specchat --self-test` (offscreen).")
    if shutil.which("ldd") is None:
        return None
    packages, unknown = packages_for(missing_libraries(ldd_output(xcb_plugin_files())))
    if packages and os.geteuid() == 0 and shutil.which("apt-get"):
        installed = subprocess.run(install_command(packages), capture_output=True, text=True)
        if installed.returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True)
            installed = subprocess.run(install_command(packages), capture_output=True, text=True)
        if installed.returncode == 0:
            packages = []
    if not packages and not unknown:
        return None
    parts = []
    if packages:
        parts.append(f"sudo {' '.join(install_command(packages))}")
    if unknown:
        parts.append(f"install the packages that provide {', '.join(unknown)}")
    return "Qt needs system libraries this machine lacks to open a window. Run: " + "; then ".join(parts) + ", then `make run` again."


def main() -> int:
    problem = check()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
