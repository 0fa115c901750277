"""`python -m engine` runs the CLI."""

from .tools.cli import entry_point

entry_point()
