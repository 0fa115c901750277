"""`make run` on a fresh Linux desktop: the system libraries Qt's xcb plugin misses, named as packages to install."""

from __future__ import annotations

from app.system_check import check, missing_libraries, packages_for

LDD = """\tlinux-vdso.so.1 (0x00007ffd)
\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
\tlibweird-thing.so.3 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)
"""


def test_the_missing_libraries_become_packages_to_install() -> None:
    assert missing_libraries(LDD) == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libweird-thing.so.3"]
    assert packages_for(missing_libraries(LDD)) == (["libxcb-icccm4", "libxcb-keysyms1"], ["libweird-thing.so.3"])


def test_a_missing_library_stops_with_the_exact_command(monkeypatch) -> None:
    monkeypatch.setattr("app.system_check.sys.platform", "linux")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.setattr("app.system_check.ldd_output", lambda files: LDD)
    monkeypatch.setattr("app.system_check.os.geteuid", lambda: 1000)  # not root: cannot install
    message = check()
    assert "sudo apt-get install -y -q libxcb-icccm4 libxcb-keysyms1" in message
    assert "libweird-thing.so.3" in message and message.endswith("then `make run` again.")
    monkeypatch.setattr("app.system_check.ldd_output", lambda files: "\tlibc.so.6 => /lib/libc.so.6\n")
    assert check() is None


def test_no_display_is_said_plainly(monkeypatch) -> None:
    monkeypatch.setattr("app.system_check.sys.platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    assert "There is no display" in check()
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")  # tests and --self-test need no display
    assert check() is None
