"""`specchat`: start the desktop app (or, with --self-test, check that it works and exit)."""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="specchat", description="SpecChat: speculative decoding, live.")
    parser.add_argument("--self-test", action="store_true", help="open offscreen, generate a short answer, exit 0 if it worked")
    parser.add_argument("--target", help="with --self-test: the target model (default: tiny built-in models)")
    parser.add_argument("--draft", help="with --self-test: the draft model")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.self_test:
        from .self_test import run_self_test

        return run_self_test(args.target, args.draft)

    from pathlib import Path

    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from .garbage_collection import GuiThreadCollection
    from .main_window import MainWindow

    app = QApplication(sys.argv[:1])
    GuiThreadCollection(app)
    app.setApplicationName("SpecChat")
    app.setOrganizationName("SpecChat")
    app.setWindowIcon(QIcon(str(Path(__file__).resolve().parent.parent / "resources" / "SpecChat.png")))
    window = MainWindow()
    window.show()
    return app.exec()


def entry_point() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry_point()
