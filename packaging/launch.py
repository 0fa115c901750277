"""The frozen app's entry point (PyInstaller needs a script, not a console-script entry)."""

from app.main import entry_point

entry_point()
